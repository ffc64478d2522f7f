"""GELU + standard deviation in Triton: one read of the input, Chan's merge of chunk statistics.

The input is seen as (outer, R, inner) with the reduced elements in the middle: a free view for
one int dim; for a tuple of dims (or dim=None) the reduced dims are permuted to the end and the
view is made contiguous (inner = 1). Output j reduces R values at stride inner. Each program
owns BLOCK_J outputs and one of S slices of R and walks its slice in BLOCK_R chunks: a chunk's
mean and sum of squared deviations are computed exactly in registers (two passes over the
registers, not over memory) and merged into the running (count, mean, M2) with Chan's formula,
which stays accurate when the mean is large against the spread. A second kernel merges the S
partial results of each output the same way and takes sqrt(M2 / max(0, n - correction)). S > 1
only when there are too few outputs to fill the GPU (e.g. dim=None).
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
def _partial_kernel(
    x_ptr, cnt_ptr, mean_ptr, m2_ptr, J, R, inner, slice_len, S,
    APPROX_TANH: tl.constexpr, BLOCK_J: tl.constexpr, BLOCK_R: tl.constexpr,
):  # fmt: skip
    offs_j = tl.program_id(0).to(tl.int64) * BLOCK_J + tl.arange(0, BLOCK_J)
    s = tl.program_id(1)
    base = (offs_j // inner) * R * inner + offs_j % inner  # element r = 0 of each output
    cnt = tl.zeros((BLOCK_J,), tl.float32)
    mean = tl.zeros((BLOCK_J,), tl.float32)
    m2 = tl.zeros((BLOCK_J,), tl.float32)
    r_end = tl.minimum(R, (s + 1) * slice_len)
    for r0 in range(s * slice_len, r_end, BLOCK_R):
        offs_r = r0 + tl.arange(0, BLOCK_R)
        ok = (offs_j[:, None] < J) & (offs_r[None, :] < r_end)
        x = tl.load(
            x_ptr + base[:, None] + offs_r.to(tl.int64)[None, :] * inner, mask=ok, other=0.0
        )
        g = tl.where(ok, _gelu(x, APPROX_TANH), 0.0)
        c_cnt = tl.sum(ok.to(tl.float32), axis=1)
        c_mean = tl.sum(g, axis=1) / tl.maximum(c_cnt, 1.0)
        dev = tl.where(ok, g - c_mean[:, None], 0.0)
        c_m2 = tl.sum(dev * dev, axis=1)
        # Chan et al.: merge (cnt, mean, m2) with the chunk's (c_cnt, c_mean, c_m2)
        tot = cnt + c_cnt
        delta = c_mean - mean
        frac = tl.where(tot > 0, c_cnt / tl.maximum(tot, 1.0), 0.0)
        mean = mean + delta * frac
        m2 = m2 + c_m2 + delta * delta * cnt * frac
        cnt = tot
    out = offs_j * S + s
    ok_j = offs_j < J
    tl.store(cnt_ptr + out, cnt, mask=ok_j)
    tl.store(mean_ptr + out, mean, mask=ok_j)
    tl.store(m2_ptr + out, m2, mask=ok_j)


@triton.jit
def _finish_kernel(
    cnt_ptr, mean_ptr, m2_ptr, y_ptr, J, S, correction,
    BLOCK_J: tl.constexpr, BLOCK_S: tl.constexpr,
):  # fmt: skip
    offs_j = tl.program_id(0) * BLOCK_J + tl.arange(0, BLOCK_J)
    cnt = tl.zeros((BLOCK_J,), tl.float32)
    mean = tl.zeros((BLOCK_J,), tl.float32)
    m2 = tl.zeros((BLOCK_J,), tl.float32)
    for s0 in range(0, S, BLOCK_S):
        offs_s = s0 + tl.arange(0, BLOCK_S)
        ok = (offs_j[:, None] < J) & (offs_s[None, :] < S)
        idx = offs_j[:, None] * S + offs_s[None, :]
        c = tl.load(cnt_ptr + idx, mask=ok, other=0.0)
        mu = tl.load(mean_ptr + idx, mask=ok, other=0.0)
        q = tl.load(m2_ptr + idx, mask=ok, other=0.0)
        b_cnt = tl.sum(c, axis=1)  # merge a block of partials, then into the running total
        b_mean = tl.sum(c * mu, axis=1) / tl.maximum(b_cnt, 1.0)
        dmu = tl.where(ok, mu - b_mean[:, None], 0.0)
        b_m2 = tl.sum(q + c * dmu * dmu, axis=1)
        tot = cnt + b_cnt
        delta = b_mean - mean
        frac = tl.where(tot > 0, b_cnt / tl.maximum(tot, 1.0), 0.0)
        mean = mean + delta * frac
        m2 = m2 + b_m2 + delta * delta * cnt * frac
        cnt = tot
    var = m2 / tl.maximum(cnt - correction, 0.0)  # like torch: n <= correction gives inf/NaN
    tl.store(y_ptr + offs_j, tl.sqrt(var), mask=offs_j < J)


def fused_gelu_std(input, dim=None, keepdim=False, correction=1, approximate="none", out=None):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    nd = input.dim()
    dims = list(range(nd)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    dims = sorted({d % max(nd, 1) for d in dims})
    kept = [d for d in range(nd) if d not in dims]
    out_shape = [1 if d in dims else input.shape[d] for d in range(nd)]
    if len(dims) == 1:  # a free (outer, R, inner) view of the contiguous input
        x = input.contiguous()
        R = x.shape[dims[0]]
        inner = x.shape[dims[0] + 1 :].numel()
    else:  # reduced dims last, then contiguous
        x = input.permute(*kept, *dims).contiguous()
        R = x.shape[len(kept) :].numel()
        inner = 1
    J = x.numel() // max(R, 1)
    BLOCK_J, BLOCK_R = (4, 256) if inner == 1 else (64, 16)
    S = 1  # split the reduction when there are few outputs
    while triton.cdiv(J, BLOCK_J) * S < 1024 and R // (2 * S) >= 4 * BLOCK_R:
        S *= 2
    slice_len = triton.cdiv(triton.cdiv(R, S), BLOCK_R) * BLOCK_R
    S = triton.cdiv(R, slice_len) if R else 1
    parts = [torch.empty((J * S,), device=x.device, dtype=torch.float32) for _ in range(3)]
    y = torch.empty(out_shape, device=x.device, dtype=torch.float32)
    if J:
        _partial_kernel[(triton.cdiv(J, BLOCK_J), S)](
            x, *parts, J, R, inner, slice_len, S,
            APPROX_TANH=approximate == "tanh", BLOCK_J=BLOCK_J, BLOCK_R=BLOCK_R,
        )  # fmt: skip
        _finish_kernel[(triton.cdiv(J, 64),)](
            *parts, y, J, S, float(correction), BLOCK_J=64, BLOCK_S=16
        )
    if not keepdim:
        y = y.reshape([input.shape[d] for d in kept])
    if out is not None:
        out.copy_(y)
        return out
    return y
