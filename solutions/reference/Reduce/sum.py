"""Sum over dims in Triton: view the input as (A, K, B) and reduce the middle axis.

When the reduced dims are adjacent, the contiguous input already is an (A, K, B) array (A: the
dims before, K: the reduced ones, B: the dims after), and programs read [BLOCK_K, BLOCK_B] tiles
that are contiguous along B. Other dim sets are first permuted to the end (a copy), giving
B = 1. When there are too few outputs to fill the GPU, K is split across programs that write
partial sums, and a second kernel adds the partials in a fixed order.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _sum_kernel(
    x_ptr,
    out_ptr,
    K,
    B,
    n_bblocks,
    CHUNK,
    SPLIT_STRIDE,
    BLOCK_K: tl.constexpr,
    BLOCK_B: tl.constexpr,
    F64: tl.constexpr,
):
    pid = tl.program_id(0)
    part = tl.program_id(1)
    a = (pid // n_bblocks).to(tl.int64)
    acc_t = tl.float64 if F64 else tl.float32
    lo = part * CHUNK
    hi = tl.minimum(lo + CHUNK, K)
    base = x_ptr + a * K * B
    if BLOCK_B == 1:  # reduced elements are contiguous: 1-D blocks along K
        acc = tl.zeros((BLOCK_K,), acc_t)
        for start in range(lo, hi, BLOCK_K):
            k = start + tl.arange(0, BLOCK_K)
            acc += tl.load(base + k, mask=k < hi, other=0.0).to(acc_t)
        tl.store(out_ptr + part * SPLIT_STRIDE + a, tl.sum(acc, axis=0))
    else:  # [BLOCK_K, BLOCK_B] tiles, contiguous along B
        b = (pid % n_bblocks) * BLOCK_B + tl.arange(0, BLOCK_B)
        bmask = b < B
        acc = tl.zeros((BLOCK_K, BLOCK_B), acc_t)
        for start in range(lo, hi, BLOCK_K):
            k = start + tl.arange(0, BLOCK_K)
            mask = (k < hi)[:, None] & bmask[None, :]
            x = tl.load(base + k[:, None].to(tl.int64) * B + b[None, :], mask=mask, other=0.0)
            acc += x.to(acc_t)
        # partial sums of split `part` for outputs a*B + b
        tl.store(out_ptr + part * SPLIT_STRIDE + a * B + b, tl.sum(acc, axis=0), mask=bmask)


@triton.jit
def _finish_kernel(
    part_ptr, out_ptr, R, SPLIT, F64: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_R: tl.constexpr
):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = r < R
    acc = tl.zeros((BLOCK_S, BLOCK_R), tl.float64 if F64 else tl.float32)
    for s0 in range(0, SPLIT, BLOCK_S):  # fixed order: deterministic
        s = s0 + tl.arange(0, BLOCK_S)
        mask = (s < SPLIT)[:, None] & rmask[None, :]
        acc += tl.load(part_ptr + s[:, None] * R + r[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + r, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty), mask=rmask)


def sum(input, dim, keepdim=False, dtype=None):
    nd = input.dim()
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    dims = sorted({d % nd for d in dims}) if nd else []
    if nd == 0 or not dims:
        dims = list(range(nd))  # torch: an empty dim list reduces everything
    out_dtype = dtype if dtype is not None else input.dtype
    f64 = out_dtype == torch.float64
    kept = [d for d in range(nd) if d not in dims]
    shape = list(input.shape)
    if dims == list(range(dims[0], dims[-1] + 1)):  # adjacent: no copy
        x = input.contiguous()
        A = math.prod(shape[: dims[0]])
        K = math.prod(shape[dims[0] : dims[-1] + 1])
        B = math.prod(shape[dims[-1] + 1 :])
    else:
        x = input.permute(*kept, *dims).contiguous()
        A, K, B = math.prod(shape[d] for d in kept), math.prod(shape[d] for d in dims), 1
    out_shape = (
        [1 if d in dims else shape[d] for d in range(nd)] if keepdim else [shape[d] for d in kept]
    )
    out = torch.empty(out_shape, dtype=out_dtype, device=input.device)
    R = A * B
    if R == 0:
        return out
    BLOCK_B = 1 if B == 1 else min(triton.next_power_of_2(B), 256)
    BLOCK_K = max(16, 4096 // BLOCK_B) if B > 1 else 2048
    n_bblocks = triton.cdiv(B, BLOCK_B)
    programs = A * n_bblocks
    split = max(1, min(triton.cdiv(1024, programs), triton.cdiv(K, BLOCK_K)))
    chunk = triton.cdiv(triton.cdiv(K, split), BLOCK_K) * BLOCK_K
    split = max(1, triton.cdiv(K, chunk))
    if split == 1:  # one program per output block: write the result directly
        _sum_kernel[(programs, 1)](
            x, out, K, B, n_bblocks, max(chunk, 1), 0, BLOCK_K=BLOCK_K, BLOCK_B=BLOCK_B, F64=f64
        )
        return out
    acc_dtype = torch.float64 if f64 else torch.float32
    partial = torch.empty((split, R), dtype=acc_dtype, device=input.device)
    _sum_kernel[(programs, split)](
        x, partial, K, B, n_bblocks, chunk, R, BLOCK_K=BLOCK_K, BLOCK_B=BLOCK_B, F64=f64
    )
    BLOCK_R = min(triton.next_power_of_2(R), 256)
    BLOCK_S = min(triton.next_power_of_2(split), max(1, 2048 // BLOCK_R))
    _finish_kernel[(triton.cdiv(R, BLOCK_R),)](
        partial, out, R, split, F64=f64, BLOCK_S=BLOCK_S, BLOCK_R=BLOCK_R
    )
    return out
