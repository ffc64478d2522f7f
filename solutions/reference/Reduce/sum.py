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
def _sum_kernel(x_ptr, out_ptr, K, B, n_bblocks, CHUNK, SPLIT_STRIDE,
                BLOCK_K: tl.constexpr, BLOCK_B: tl.constexpr, F64: tl.constexpr):
    pid = tl.program_id(0)
    part = tl.program_id(1)
    a = (pid // n_bblocks).to(tl.int64)
    b = (pid % n_bblocks) * BLOCK_B + tl.arange(0, BLOCK_B)
    bmask = b < B
    acc_t = tl.float64 if F64 else tl.float32
    acc = tl.zeros((BLOCK_K, BLOCK_B), acc_t)
    lo = part * CHUNK
    hi = tl.minimum(lo + CHUNK, K)
    base = x_ptr + a * K * B
    for start in range(lo, hi, BLOCK_K):
        k = start + tl.arange(0, BLOCK_K)
        mask = (k < hi)[:, None] & bmask[None, :]
        x = tl.load(base + k[:, None].to(tl.int64) * B + b[None, :], mask=mask, other=0.0)
        acc += x.to(acc_t)
    total = tl.sum(acc, axis=0)
    # partial sums of split `part` for outputs a*B + b
    tl.store(out_ptr + part * SPLIT_STRIDE + a * B + b, total, mask=bmask)


@triton.jit
def _finish_kernel(part_ptr, out_ptr, R, SPLIT, F64: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = r < R
    acc = tl.zeros((BLOCK,), tl.float64 if F64 else tl.float32)
    for s in range(0, SPLIT):  # fixed order: deterministic
        acc += tl.load(part_ptr + s * R + r, mask=mask, other=0.0)
    tl.store(out_ptr + r, acc.to(out_ptr.dtype.element_ty), mask=mask)


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
        K = math.prod(shape[dims[0]: dims[-1] + 1])
        B = math.prod(shape[dims[-1] + 1:])
    else:
        x = input.permute(*kept, *dims).contiguous()
        A, K, B = math.prod(shape[d] for d in kept), math.prod(shape[d] for d in dims), 1
    out_shape = [1 if d in dims else shape[d] for d in range(nd)] if keepdim else [
        shape[d] for d in kept]
    out = torch.empty(out_shape, dtype=out_dtype, device=input.device)
    R = A * B
    if R == 0:
        return out
    BLOCK_B = 1 if B == 1 else min(triton.next_power_of_2(B), 256)
    BLOCK_K = max(8, 2048 // BLOCK_B)
    n_bblocks = triton.cdiv(B, BLOCK_B)
    programs = A * n_bblocks
    split = max(1, min(triton.cdiv(1024, programs), triton.cdiv(K, BLOCK_K)))
    chunk = triton.cdiv(triton.cdiv(K, split), BLOCK_K) * BLOCK_K
    split = max(1, triton.cdiv(K, chunk))
    if split == 1:  # one program per output block: write the result directly
        _sum_kernel[(programs, 1)](x, out, K, B, n_bblocks, max(chunk, 1), 0,
                                   BLOCK_K=BLOCK_K, BLOCK_B=BLOCK_B, F64=f64)
        return out
    acc_dtype = torch.float64 if f64 else torch.float32
    partial = torch.empty((split, R), dtype=acc_dtype, device=input.device)
    _sum_kernel[(programs, split)](x, partial, K, B, n_bblocks, chunk, R,
                                   BLOCK_K=BLOCK_K, BLOCK_B=BLOCK_B, F64=f64)
    BLOCK = 1024
    _finish_kernel[(triton.cdiv(R, BLOCK),)](partial, out, R, split, F64=f64, BLOCK=BLOCK)
    return out
