"""log_softmax(repeat_interleave(x, repeats, dim), dim) in Triton, without materialising the
repeated tensor.

The input is viewed as (outer, L, inner) with `dim` in the middle. Repetition only changes the
normaliser: log sum_k exp(y_k) = log sum_j r_j exp(x_j), so
  1. one program per (outer, block of inner columns) runs an online weighted log-sum-exp over
     the L axis (counts r_j, elements with r_j = 0 excluded) and stores the max m and log(s);
  2. an element-wise pass over the (outer, L_out, inner) output finds each position's source
     j(k) and writes (x_j - m) - log(s). For an int count j(k) = k // r; for a count tensor,
     a one-program scan kernel first builds the inclusive prefix sums of the counts and j(k)
     is found by binary search (the first j with cumsum_j > k).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _cumsum_kernel(r_ptr, c_ptr, L, BLOCK: tl.constexpr):
    """Inclusive prefix sums of the L counts, one program, carried across blocks."""
    carry = tl.zeros((), tl.int64)
    for l0 in range(0, L, BLOCK):
        offs = l0 + tl.arange(0, BLOCK)
        r = tl.load(r_ptr + offs, mask=offs < L, other=0).to(tl.int64)
        c = tl.cumsum(r, axis=0) + carry
        tl.store(c_ptr + offs, c, mask=offs < L)
        carry += tl.sum(r, axis=0)


@triton.jit
def _weighted_lse_kernel(
    x_ptr,
    r_ptr,
    lse_ptr,
    L,
    inner,
    n_iblocks,
    rep,
    TENSOR_REPS: tl.constexpr,
    F64: tl.constexpr,
    BLOCK_L: tl.constexpr,
    BLOCK_I: tl.constexpr,
):
    pid = tl.program_id(0)
    outer = pid // n_iblocks
    cols = (pid % n_iblocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    col_ok = cols < inner
    base = outer.to(tl.int64) * L * inner
    acc_ty = tl.float64 if F64 else tl.float32
    m = tl.full((BLOCK_I,), float("-inf"), acc_ty)
    s = tl.zeros((BLOCK_I,), acc_ty)
    for l0 in range(0, L, BLOCK_L):
        rows = l0 + tl.arange(0, BLOCK_L)
        if TENSOR_REPS:
            w = tl.load(r_ptr + rows, mask=rows < L, other=0).to(acc_ty)
        else:
            w = tl.where(rows < L, rep, 0).to(acc_ty)
        ok = (w[:, None] > 0) & col_ok[None, :]  # absent elements take no part
        x = tl.load(x_ptr + base + rows[:, None] * inner + cols[None, :], mask=ok, other=0.0)
        v = tl.where(ok, x.to(acc_ty), float("-inf"))
        m_new = tl.maximum(m, tl.max(v, axis=0))
        rescale = tl.where(m == m_new, 1.0, tl.exp(m - m_new))  # also covers -inf == -inf
        terms = tl.where(v == float("-inf"), 0.0, w[:, None] * tl.exp(v - m_new[None, :]))
        s = s * rescale + tl.sum(terms, axis=0)
        m = m_new
    # m and log(s) are kept apart: (x - m) - log(s) as torch does, since m + log(s) would round
    # away log(s) next to a huge m. All -inf: x - m = NaN below, as in torch.
    at = (outer.to(tl.int64) * inner + cols) * 2
    tl.store(lse_ptr + at, m, mask=col_ok)
    tl.store(lse_ptr + at + 1, tl.log(s), mask=col_ok)


@triton.jit
def _gather_kernel(
    x_ptr,
    c_ptr,
    lse_ptr,
    y_ptr,
    n,
    L,
    L_out,
    inner,
    rep,
    TENSOR_REPS: tl.constexpr,
    F64: tl.constexpr,
    SEARCH_STEPS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i = offs % inner
    k = (offs // inner) % L_out
    o = offs // (inner * L_out)
    if TENSOR_REPS:
        lo = tl.zeros((BLOCK,), tl.int64)
        hi = tl.zeros((BLOCK,), tl.int64) + (L - 1)
        for _ in tl.static_range(SEARCH_STEPS):  # first j with cumsum[j] > k
            mid = (lo + hi) // 2
            c = tl.load(c_ptr + mid, mask=mask, other=0)
            right = c <= k
            lo = tl.where(right, mid + 1, lo)
            hi = tl.where(right, hi, mid)
        j = lo
    else:
        j = k // rep
    x = tl.load(x_ptr + (o * L + j) * inner + i, mask=mask, other=0.0)
    m = tl.load(lse_ptr + (o * inner + i) * 2, mask=mask, other=0.0)
    log_s = tl.load(lse_ptr + (o * inner + i) * 2 + 1, mask=mask, other=0.0)
    acc_ty = tl.float64 if F64 else tl.float32
    tl.store(y_ptr + offs, (x.to(acc_ty) - m) - log_s, mask=mask)


def fused_repeat_interleave_log_softmax(
    input, repeats, dim=None, *, output_size=None, dtype=None, out=None
):
    x = input.contiguous()
    if dim is None:
        x = x.reshape(-1)
        d = 0
    else:
        d = dim + x.dim() if dim < 0 else dim
    shape = list(x.shape)
    L = shape[d]
    outer = 1
    for s in shape[:d]:
        outer *= s
    inner = 1
    for s in shape[d + 1 :]:
        inner *= s
    tensor_reps = isinstance(repeats, torch.Tensor) and repeats.dim() > 0
    out_dtype = dtype if dtype is not None else x.dtype
    f64 = out_dtype == torch.float64
    rep = 0 if tensor_reps else int(repeats)
    cum = x  # placeholder pointer when the counts are an int
    if tensor_reps:
        reps = repeats.contiguous()
        cum = torch.empty(L, device=x.device, dtype=torch.int64)
        if L:
            _cumsum_kernel[(1,)](reps, cum, L, BLOCK=1024)
        L_out = output_size if output_size is not None else (int(cum[-1]) if L else 0)
    else:
        reps = x
        L_out = L * rep
    shape[d] = L_out
    y = torch.empty(shape, device=x.device, dtype=out_dtype)
    if y.numel() == 0:
        return y
    lse = torch.empty((outer, inner, 2), device=x.device, dtype=out_dtype)
    BLOCK_I = min(triton.next_power_of_2(inner), 64)
    BLOCK_L = max(min(triton.next_power_of_2(L), 4096 // BLOCK_I), 1)
    n_iblocks = triton.cdiv(inner, BLOCK_I)
    _weighted_lse_kernel[(outer * n_iblocks,)](
        x,
        reps,
        lse,
        L,
        inner,
        n_iblocks,
        rep,
        TENSOR_REPS=tensor_reps,
        F64=f64,
        BLOCK_L=BLOCK_L,
        BLOCK_I=BLOCK_I,
    )
    n = y.numel()
    BLOCK = 1024
    _gather_kernel[(triton.cdiv(n, BLOCK),)](
        x,
        cum,
        lse,
        y,
        n,
        L,
        L_out,
        inner,
        rep,
        TENSOR_REPS=tensor_reps,
        F64=f64,
        SEARCH_STEPS=max(L - 1, 1).bit_length() + 1,
        BLOCK=BLOCK,
    )
    if out is not None:
        out.copy_(y)
        return out
    return y.reshape(-1) if dim is None else y
