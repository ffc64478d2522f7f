"""min with indices in Triton: view the input as (A, K, B) and reduce the middle axis to
(value, index).

Programs read [BLOCK_K, BLOCK_B] tiles: along B when the reduced dim has inner dims, or, when it
is the last dim, BLOCK_B short rows at once, contiguous along K. Every lane keeps its best value and
the index where it first saw it: it moves only on a strictly smaller value or on the first NaN,
so the earliest index survives ties and NaN propagates. The lanes are merged by taking the
minimum and, among the lanes that hold it, the smallest index. When there are too few outputs to
fill the GPU, K is split into chunks whose (value, index) pairs a second kernel merges the same
way.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _merge_lanes(best, bidx, seen):
    """Reduce axis 0 of lane states to (min value, first index), NaN counting as the minimum."""
    nan = (best != best) & seen
    any_nan = tl.max(nan.to(tl.int32), axis=0) > 0
    m = tl.min(tl.where(seen & ~nan, best, float("inf")), axis=0)
    cand = tl.where(any_nan[None, :], nan, seen & (best == m[None, :]))
    idx = tl.min(tl.where(cand, bidx, 1 << 62), axis=0)
    return tl.where(any_nan, float("nan"), m), idx


@triton.jit
def _min_kernel(
    x_ptr,
    val_ptr,
    idx_ptr,
    K,
    B,
    sa,
    sk,
    sb,
    n_bblocks,
    CHUNK,
    SPLIT_STRIDE,
    BLOCK_K: tl.constexpr,
    BLOCK_B: tl.constexpr,
):
    pid = tl.program_id(0)
    part = tl.program_id(1)
    a = (pid // n_bblocks).to(tl.int64)
    b = (pid % n_bblocks) * BLOCK_B + tl.arange(0, BLOCK_B)
    bmask = b < B
    lo = part.to(tl.int64) * CHUNK
    hi = tl.minimum(lo + CHUNK, K)
    base = x_ptr + a * sa
    best = tl.full((BLOCK_K, BLOCK_B), float("inf"), tl.float32)
    bidx = tl.zeros((BLOCK_K, BLOCK_B), tl.int64)
    seen = tl.zeros((BLOCK_K, BLOCK_B), tl.int1)
    for start in range(lo, hi, BLOCK_K):
        k = start + tl.arange(0, BLOCK_K).to(tl.int64)
        mask = (k < hi)[:, None] & bmask[None, :]
        x = tl.load(base + k[:, None] * sk + b[None, :] * sb, mask=mask, other=0.0).to(tl.float32)
        # strictly smaller, or the first NaN of the lane, or the lane's first element
        upd = mask & (best == best) & ((x < best) | (x != x) | ~seen)
        best = tl.where(upd, x, best)
        bidx = tl.where(upd, k[:, None] + tl.zeros((BLOCK_K, BLOCK_B), tl.int64), bidx)
        seen = seen | mask
    val, idx = _merge_lanes(best, bidx, seen)
    out = part * SPLIT_STRIDE + a * B + b
    tl.store(val_ptr + out, val.to(val_ptr.dtype.element_ty), mask=bmask)
    tl.store(idx_ptr + out, idx, mask=bmask)


@triton.jit
def _finish_kernel(
    pval_ptr, pidx_ptr, val_ptr, idx_ptr, R, SPLIT, BLOCK_S: tl.constexpr, BLOCK_R: tl.constexpr
):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = r < R
    best = tl.full((BLOCK_S, BLOCK_R), float("inf"), tl.float32)
    bidx = tl.zeros((BLOCK_S, BLOCK_R), tl.int64)
    seen = tl.zeros((BLOCK_S, BLOCK_R), tl.int1)
    for s0 in range(0, SPLIT, BLOCK_S):  # chunks in increasing index order
        s = s0 + tl.arange(0, BLOCK_S)
        mask = (s < SPLIT)[:, None] & rmask[None, :]
        off = s[:, None] * R + r[None, :]
        v = tl.load(pval_ptr + off, mask=mask, other=0.0)
        i = tl.load(pidx_ptr + off, mask=mask, other=0)
        upd = mask & (best == best) & ((v < best) | (v != v) | ~seen)
        best = tl.where(upd, v, best)
        bidx = tl.where(upd, i, bidx)
        seen = seen | mask
    val, idx = _merge_lanes(best, bidx, seen)
    tl.store(val_ptr + r, val.to(val_ptr.dtype.element_ty), mask=rmask)
    tl.store(idx_ptr + r, idx, mask=rmask)


def min(input_tensor, dim, keepdim=False):
    x = input_tensor.contiguous()
    shape = list(x.shape) or [1]
    d = dim % len(shape)
    A, K, B = math.prod(shape[:d]), shape[d], math.prod(shape[d + 1 :])
    out_shape = list(x.shape)
    if out_shape:
        out_shape = shape[:d] + ([1] if keepdim else []) + shape[d + 1 :]
    values = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    indices = torch.empty(out_shape, dtype=torch.int64, device=x.device)
    if K == 0:
        raise ValueError("min of an empty slice")
    R = A * B
    plan = _plan(A, K, B)
    programs, split = plan["programs"], plan["split"]
    args = (K, plan["Bv"], plan["sa"], plan["sk"], plan["sb"], plan["n_bblocks"], plan["chunk"])
    blocks = dict(BLOCK_K=plan["BLOCK_K"], BLOCK_B=plan["BLOCK_B"])
    if split == 1:
        _min_kernel[(programs, 1)](x, values, indices, *args, 0, **blocks)
        return values, indices
    pvals = torch.empty((split, R), dtype=torch.float32, device=x.device)
    pidxs = torch.empty((split, R), dtype=torch.int64, device=x.device)
    _min_kernel[(programs, split)](x, pvals, pidxs, *args, R, **blocks)
    BLOCK_R = min_int(triton.next_power_of_2(R), 128)
    BLOCK_S = min_int(triton.next_power_of_2(split), max(1, 1024 // BLOCK_R))
    _finish_kernel[(triton.cdiv(R, BLOCK_R),)](
        pvals, pidxs, values, indices, R, split, BLOCK_S=BLOCK_S, BLOCK_R=BLOCK_R
    )
    return values, indices


def _plan(A, K, B):
    """Tiling of the (A, K, B) reduction. With B = 1 the rows themselves are the tile's second
    axis (several short rows per program, contiguous along K); otherwise tiles run along B."""
    if B == 1:
        Av, Bv, sa, sk, sb = 1, A, 0, 1, K
        BLOCK_K = min_int(2048, triton.next_power_of_2(K))
        BLOCK_B = min_int(max(1, 2048 // BLOCK_K), triton.next_power_of_2(A))
    else:
        Av, Bv, sa, sk, sb = A, B, K * B, B, 1
        BLOCK_B = min_int(triton.next_power_of_2(B), 128)
        BLOCK_K = min_int(max(8, 2048 // BLOCK_B), triton.next_power_of_2(K))
    BLOCK_K, BLOCK_B = max(2, BLOCK_K), max(2, BLOCK_B)  # no 1-wide tiles
    n_bblocks = triton.cdiv(Bv, BLOCK_B)
    programs = Av * n_bblocks
    # split K into chunks when the outputs alone give too few programs to fill the GPU
    split = max(1, min_int(triton.cdiv(1024, programs), triton.cdiv(K, BLOCK_K)))
    chunk = triton.cdiv(triton.cdiv(K, split), BLOCK_K) * BLOCK_K
    return dict(
        programs=programs,
        split=triton.cdiv(K, chunk),
        chunk=chunk,
        Bv=Bv,
        sa=sa,
        sk=sk,
        sb=sb,
        n_bblocks=n_bblocks,
        BLOCK_K=BLOCK_K,
        BLOCK_B=BLOCK_B,
    )


def min_int(a, b):
    return a if a < b else b  # the entry is named `min`, shadowing the builtin
