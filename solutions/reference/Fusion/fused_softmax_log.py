"""softmax(log(x)) along any dim in Triton: an online softmax over (outer, L, inner) views.

The input is viewed as (outer, L, inner) with the softmax dim in the middle. Each program owns
one `outer` index and BLOCK_I adjacent `inner` columns (contiguous in memory, so loads are
coalesced; for the last dim inner = 1), and walks the L axis in BLOCK_L chunks twice:
  1. running max m and running sum s of exp(v - m), rescaled whenever m grows (online softmax),
  2. out = exp(v - m) / s.
v = log(x) is recomputed in the second pass rather than stored. -inf terms (x = 0) contribute
exactly 0 and never produce the inf - inf NaN, while +inf, NaN and negative inputs poison their
line with NaN exactly as the two-step torch computation does.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_log_kernel(
    x_ptr,
    y_ptr,
    L,
    inner,
    n_iblocks,
    BLOCK_L: tl.constexpr,
    BLOCK_I: tl.constexpr,
    F64: tl.constexpr,
):
    pid = tl.program_id(0)
    outer = pid // n_iblocks
    cols = (pid % n_iblocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    col_ok = cols < inner
    base = outer.to(tl.int64) * L * inner
    rows0 = tl.arange(0, BLOCK_L)
    acc_ty = tl.float64 if F64 else tl.float32
    m = tl.full((BLOCK_I,), float("-inf"), acc_ty)
    s = tl.zeros((BLOCK_I,), acc_ty)
    for l0 in range(0, L, BLOCK_L):
        rows = l0 + rows0
        ok = (rows[:, None] < L) & col_ok[None, :]
        offs = base + rows[:, None] * inner + cols[None, :]
        x = tl.load(x_ptr + offs, mask=ok, other=1.0)
        v = tl.where(ok, tl.log(x).to(acc_ty), float("-inf"))  # log in float32, as torch does
        m_new = tl.maximum(m, tl.max(v, axis=0))
        rescale = tl.where(m == m_new, 1.0, tl.exp(m - m_new))  # -inf == -inf: keep s = 0
        terms = tl.where(v == float("-inf"), 0.0, tl.exp(v - m_new[None, :]))
        s = s * rescale + tl.sum(terms, axis=0)
        m = m_new
    inv = 1.0 / s  # s = 0 (all -inf) gives inf, and 0 * inf = NaN below, as in torch
    for l0 in range(0, L, BLOCK_L):
        rows = l0 + rows0
        ok = (rows[:, None] < L) & col_ok[None, :]
        offs = base + rows[:, None] * inner + cols[None, :]
        x = tl.load(x_ptr + offs, mask=ok, other=1.0)
        v = tl.log(x).to(acc_ty)
        e = tl.where(v == float("-inf"), 0.0, tl.exp(v - m[None, :]))
        tl.store(y_ptr + offs, e * inv[None, :], mask=ok)


def fused_softmax_log(input, dim=-1, dtype=None):
    x = input.contiguous()
    nd = max(x.dim(), 1)
    d = dim + nd if dim < 0 else dim
    shape = list(x.shape) if x.dim() else [1]
    L = shape[d]
    outer = 1
    for s in shape[:d]:
        outer *= s
    inner = 1
    for s in shape[d + 1 :]:
        inner *= s
    out_dtype = dtype if dtype is not None else x.dtype
    y = torch.empty(x.shape, device=x.device, dtype=out_dtype)
    if y.numel() == 0:
        return y
    BLOCK_I = min(triton.next_power_of_2(inner), 64)
    BLOCK_L = max(min(triton.next_power_of_2(L), 4096 // BLOCK_I), 1)
    n_iblocks = triton.cdiv(inner, BLOCK_I)
    _softmax_log_kernel[(outer * n_iblocks,)](
        x,
        y,
        L,
        inner,
        n_iblocks,
        BLOCK_L=BLOCK_L,
        BLOCK_I=BLOCK_I,
        F64=out_dtype == torch.float64,
        num_warps=4 if BLOCK_L * BLOCK_I <= 2048 else 8,
    )
    return y
