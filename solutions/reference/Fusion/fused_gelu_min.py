"""GELU + min (with argmin) in Triton: GELU runs on the loads of a single reduction pass.

The input is seen as (outer, R, inner) with the reduced dim in the middle (a free view of a
contiguous tensor); output j = o * inner + i reduces R values at stride inner. A program owns
BLOCK_J outputs and walks R in chunks of BLOCK_R, keeping a running minimum and its first index. NaN
must win (torch.min propagates it), so NaNs are ranked as -inf while reducing (GELU of a finite
or infinite input is never -inf) and turned back into NaN at the end. dim=None reduces the flat
tensor in two launches: partial minima of CHUNK-sized pieces, then the minimum of those.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _gelu(x, APPROX_TANH: tl.constexpr):
    if APPROX_TANH:
        return 0.5 * x * (1.0 + libdevice.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    return 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))  # x * Phi(x)


@triton.jit
def _gelu_min_kernel(
    x_ptr, v_ptr, i_ptr, J, R, inner, total,
    APPLY_GELU: tl.constexpr, APPROX_TANH: tl.constexpr, WRITE_INDEX: tl.constexpr,
    BLOCK_J: tl.constexpr, BLOCK_R: tl.constexpr,
):  # fmt: skip
    offs_j = tl.program_id(0).to(tl.int64) * BLOCK_J + tl.arange(0, BLOCK_J)
    base = (offs_j // inner) * R * inner + offs_j % inner  # address of element r = 0 of each output
    best = tl.full((BLOCK_J,), float("inf"), tl.float32)
    best_i = tl.zeros((BLOCK_J,), tl.int64)
    for r0 in range(0, R, BLOCK_R):
        offs_r = r0 + tl.arange(0, BLOCK_R)
        addr = base[:, None] + offs_r.to(tl.int64)[None, :] * inner
        ok = (offs_j[:, None] < J) & (offs_r[None, :] < R) & (addr < total)
        x = tl.load(x_ptr + addr, mask=ok, other=0.0)
        g = _gelu(x, APPROX_TANH) if APPLY_GELU else x
        g = tl.where(g != g, float("-inf"), g)  # NaN ranks lowest
        g = tl.where(ok, g, float("inf"))
        c_min = tl.min(g, axis=1)
        # first position of the chunk's minimum
        c_idx = tl.min(tl.where(g == c_min[:, None], offs_r[None, :], 2147483647), axis=1)
        better = c_min < best  # strict: an earlier chunk keeps ties
        best_i = tl.where(better, c_idx.to(tl.int64), best_i)
        best = tl.where(better, c_min, best)
    best = tl.where(best == float("-inf"), float("nan"), best)
    tl.store(v_ptr + offs_j, best, mask=offs_j < J)
    if WRITE_INDEX:
        tl.store(i_ptr + offs_j, best_i, mask=offs_j < J)


def _launch(x, v, idx, J, R, inner, total, gelu, tanh, write_index):
    if inner == 1:  # contiguous reduction: long rows per program
        bj, br = 4, 256
    else:  # strided reduction: neighbouring outputs are contiguous
        bj, br = 128, 8
    _gelu_min_kernel[(triton.cdiv(J, bj),)](
        x, v, idx if idx is not None else v, J, R, inner, total,
        APPLY_GELU=gelu, APPROX_TANH=tanh, WRITE_INDEX=write_index,
        BLOCK_J=bj, BLOCK_R=br, num_warps=4,
    )  # fmt: skip


def fused_gelu_min(input, approximate="none", dim=None, keepdim=False, out=None):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    x = input.contiguous()
    tanh = approximate == "tanh"
    n = x.numel()
    if dim is None:
        CHUNK = 8192
        parts = triton.cdiv(n, CHUNK)
        partial = torch.empty((parts,), device=x.device, dtype=torch.float32)
        _launch(x, partial, None, parts, CHUNK, 1, n, True, tanh, False)
        y = torch.empty((), device=x.device, dtype=torch.float32)
        _launch(partial, y, None, 1, parts, 1, parts, False, False, False)  # NaN stays NaN
        return y
    d = dim % x.dim()
    R = x.shape[d]
    outer = x.shape[:d].numel()
    inner = x.shape[d + 1 :].numel()
    shape = list(x.shape)
    shape[d] = 1
    v = torch.empty(shape, device=x.device, dtype=torch.float32)
    idx = torch.empty(shape, device=x.device, dtype=torch.int64)
    if outer * inner:
        _launch(x, v, idx, outer * inner, R, inner, n, True, tanh, True)
    if not keepdim:
        v, idx = v.squeeze(d), idx.squeeze(d)
    return v, idx
