"""mean(exp(x)) over any set of dims in Triton, exp fused into the reduction's loads.

The input is permuted (as a view: no copy) so that the kept dims come first and the reduced dims
last, and padded to 4-D. Output element m then reduces the flat positions m * K + k, k < K, of
that view; each program unravels those positions through the view's sizes and strides, so any
dim set works without moving data. A program owns BLOCK_M outputs and one of SPLIT slices of K;
with SPLIT > 1 (few outputs, long reductions) the slices write partial sums and a second kernel
adds them in a fixed order, so the result is deterministic. Tile shapes follow the memory
layout: long BLOCK_K when the reduced positions are contiguous, long BLOCK_M otherwise.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _exp_mean_kernel(
    x_ptr,
    part_ptr,
    y_ptr,
    M,
    K,
    k_per_split,
    inv_k,
    S1,
    S2,
    S3,
    st0,
    st1,
    st2,
    st3,
    SINGLE: tl.constexpr,
    ACC_F64: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    split = tl.program_id(1)
    rows = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    k_lo = split * k_per_split
    k_hi = tl.minimum(k_lo + k_per_split, K)
    acc_ty = tl.float64 if ACC_F64 else tl.float32
    acc = tl.zeros((BLOCK_M, BLOCK_K), dtype=acc_ty)
    for k0 in range(k_lo, k_hi, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = row_ok[:, None] & (cols < k_hi)[None, :]
        flat = rows[:, None] * K + cols[None, :]  # position in the permuted 4-D view
        i3 = flat % S3
        r = flat // S3
        i2 = r % S2
        r = r // S2
        i1 = r % S1
        i0 = r // S1
        x = tl.load(x_ptr + i0 * st0 + i1 * st1 + i2 * st2 + i3 * st3, mask=m, other=0.0)
        e = libdevice.exp(x.to(tl.float32))  # exp in float32, as torch does before the mean
        acc += tl.where(m, e, 0.0).to(acc_ty)
    s = tl.sum(acc, axis=1)
    if SINGLE:
        tl.store(y_ptr + rows, s * inv_k, mask=row_ok)
    else:
        tl.store(part_ptr + split * M + rows, s, mask=row_ok)


@triton.jit
def _finish_kernel(part_ptr, y_ptr, M, SPLIT, inv_k, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = rows < M
    s = tl.load(part_ptr + rows, mask=ok, other=0.0)
    for i in range(1, SPLIT):  # fixed order: deterministic
        s += tl.load(part_ptr + i * M + rows, mask=ok, other=0.0)
    tl.store(y_ptr + rows, s * inv_k, mask=ok)


def _dims(dim, nd):
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return list(range(nd))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted({d % nd if nd else 0 for d in dims})


def _launch(x, dims, out_dtype):
    """Mean of exp over `dims` of x; returns the flat (M,) result."""
    nd = x.dim()
    kept = [d for d in range(nd) if d not in dims]
    v = x.permute(*kept, *dims) if nd else x.reshape(1)
    if v.dim() > 4:
        raise NotImplementedError("up to 4-D inputs")
    sizes = [1] * (4 - v.dim()) + list(v.shape)
    strides = [0] * (4 - v.dim()) + list(v.stride())
    M = 1
    for d in kept:
        M *= x.shape[d]
    K = max(v.numel() // max(M, 1), 1) if v.numel() else 0
    y = torch.empty((M,), device=x.device, dtype=out_dtype)
    if M == 0:
        return y
    f64 = out_dtype == torch.float64
    if strides[3] == 1 or len(dims) == nd:  # reduced positions contiguous: long rows
        BLOCK_K = min(triton.next_power_of_2(max(K, 1)), 1024)
        BLOCK_M = max(1, min(2048 // BLOCK_K, triton.next_power_of_2(M)))
    else:  # kept positions contiguous: coalesce across outputs
        BLOCK_M = min(triton.next_power_of_2(M), 128)
        BLOCK_K = max(1, min(4096 // BLOCK_M, triton.next_power_of_2(max(K, 1)), 64))
    m_blocks = triton.cdiv(M, BLOCK_M)
    # enough programs to fill the GPU, but each split at least a few tiles long
    split = max(1, min(triton.cdiv(512, m_blocks), triton.cdiv(K, 4 * BLOCK_K)))
    k_per_split = triton.cdiv(triton.cdiv(K, split), BLOCK_K) * BLOCK_K
    split = triton.cdiv(K, k_per_split) if K else 1
    part = torch.empty((split, M), device=x.device, dtype=out_dtype) if split > 1 else y
    inv_k = 1.0 / K if K else float("nan")  # mean of nothing is NaN
    _exp_mean_kernel[(m_blocks, split)](
        x,
        part,
        y,
        M,
        K,
        k_per_split,
        inv_k,
        sizes[1],
        sizes[2],
        sizes[3],
        *strides,
        SINGLE=split == 1,
        ACC_F64=f64,
        BLOCK_M=BLOCK_M,
        BLOCK_K=BLOCK_K,
        num_warps=8 if BLOCK_M * BLOCK_K >= 2048 else 4,
    )
    if split > 1:
        _finish_kernel[(triton.cdiv(M, 256),)](part, y, M, split, inv_k, BLOCK=256)
    return y


def fused_exp_mean(input, dim=None, keepdim=False, dtype=None, out=None):
    out_dtype = dtype if dtype is not None else input.dtype
    if out_dtype not in (torch.float32, torch.float64):
        raise NotImplementedError("float32 or float64 results")
    nd = input.dim()
    dims = _dims(dim, nd)
    y = _launch(input, dims, out_dtype)
    if keepdim:
        shape = [1 if d in dims else s for d, s in enumerate(input.shape)]
    else:
        shape = [s for d, s in enumerate(input.shape) if d not in dims]
    y = y.view(shape)
    if out is not None:
        out.copy_(y)
        return out
    return y
