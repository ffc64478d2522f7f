"""mean(input + alpha * other) over any set of dims in Triton; the sum is never materialised.

Both operands are broadcast (stride-0 views, no copy) to the common shape, permuted so the kept
dims come first and the reduced dims last, and padded to 4-D. Output element m reduces the flat
positions m * K + k (k < K) of that view; each program unravels them through the shared sizes and
gathers both operands through their own strides. A program owns BLOCK_M outputs and one of SPLIT
slices of K; with SPLIT > 1 (few outputs, long reductions) partial sums go to a buffer that a
second kernel adds in a fixed order, so results are deterministic. The add is done in float32
(torch's semantics), the accumulation in float32, or float64 when dtype=torch.float64.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _add_mean_kernel(
    x_ptr,
    o_ptr,
    part_ptr,
    y_ptr,
    M,
    K,
    k_per_split,
    alpha,
    other_scalar,
    S1,
    S2,
    S3,
    xs0,
    xs1,
    xs2,
    xs3,
    os0,
    os1,
    os2,
    os3,
    OTHER_IS_SCALAR: tl.constexpr,
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
        x = tl.load(x_ptr + i0 * xs0 + i1 * xs1 + i2 * xs2 + i3 * xs3, mask=m, other=0.0)
        if OTHER_IS_SCALAR:
            o = other_scalar
        else:
            o = tl.load(o_ptr + i0 * os0 + i1 * os1 + i2 * os2 + i3 * os3, mask=m, other=0.0)
        z = x.to(tl.float32) + alpha * o  # formed in float32, like torch.add
        acc += tl.where(m, z, 0.0).to(acc_ty)
    s = tl.sum(acc, axis=1)
    if SINGLE:
        tl.store(y_ptr + rows, s / K, mask=row_ok)  # K converts exactly (0/0: NaN mean)
    else:
        tl.store(part_ptr + split * M + rows, s, mask=row_ok)


@triton.jit
def _finish_kernel(part_ptr, y_ptr, M, SPLIT, K, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = rows < M
    s = tl.load(part_ptr + rows, mask=ok, other=0.0)
    for i in range(1, SPLIT):  # fixed order: deterministic
        s += tl.load(part_ptr + i * M + rows, mask=ok, other=0.0)
    tl.store(y_ptr + rows, s / K, mask=ok)  # not * (1/K): a float argument is float32


def _dims(dim, nd):
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return list(range(nd))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted({d % nd if nd else 0 for d in dims})


def _view4(t, shape, order):
    """t broadcast to `shape`, permuted by `order`, as (sizes, strides) padded to 4-D."""
    v = t.expand(shape).permute(*order) if len(shape) else t.reshape(1)
    pad = 4 - v.dim()
    return [1] * pad + list(v.shape), [0] * pad + list(v.stride())


def _tiles(M, K, inner_stride, reduce_all):
    if inner_stride == 1 or reduce_all:  # reduced positions contiguous: long rows
        block_k = min(triton.next_power_of_2(max(K, 1)), 1024)
        block_m = max(1, min(2048 // block_k, triton.next_power_of_2(M)))
    else:  # kept positions contiguous: coalesce across outputs
        block_m = min(triton.next_power_of_2(M), 128)
        block_k = max(1, min(4096 // block_m, triton.next_power_of_2(max(K, 1)), 64))
    return block_m, block_k


def fused_add_mean(input, other, dim=None, alpha=1, keepdim=False, dtype=None, out=None):
    scalar = not isinstance(other, torch.Tensor)
    shape = (
        tuple(input.shape) if scalar else tuple(torch.broadcast_shapes(input.shape, other.shape))
    )
    out_dtype = dtype if dtype is not None else torch.float32
    if out_dtype not in (torch.float32, torch.float64) or len(shape) > 4:
        raise NotImplementedError("float32/float64 results of up to 4-D operands")
    nd = len(shape)
    dims = _dims(dim, nd)
    kept = [d for d in range(nd) if d not in dims]
    order = kept + dims
    sizes, xst = _view4(input, shape, order)
    ost = [0] * 4 if scalar else _view4(other, shape, order)[1]
    M = 1
    for d in kept:
        M *= shape[d]
    total = 1
    for s in shape:
        total *= s
    K = total // M if M else 0
    y = torch.empty((M,), device=input.device, dtype=out_dtype)
    if M:
        BLOCK_M, BLOCK_K = _tiles(M, K, xst[3], len(dims) == nd)
        m_blocks = triton.cdiv(M, BLOCK_M)
        # enough programs to fill the GPU, each split at least a few tiles long
        split = max(1, min(triton.cdiv(512, m_blocks), triton.cdiv(K, 4 * BLOCK_K)))
        k_per_split = max(triton.cdiv(triton.cdiv(K, split), BLOCK_K) * BLOCK_K, BLOCK_K)
        split = max(triton.cdiv(K, k_per_split), 1)
        part = torch.empty((split, M), device=y.device, dtype=out_dtype) if split > 1 else y
        _add_mean_kernel[(m_blocks, split)](
            input,
            input if scalar else other,
            part,
            y,
            M,
            K,
            k_per_split,
            float(alpha),
            float(other) if scalar else 0.0,
            sizes[1],
            sizes[2],
            sizes[3],
            *xst,
            *ost,
            OTHER_IS_SCALAR=scalar,
            SINGLE=split == 1,
            ACC_F64=out_dtype == torch.float64,
            BLOCK_M=BLOCK_M,
            BLOCK_K=BLOCK_K,
            num_warps=8 if BLOCK_M * BLOCK_K >= 2048 else 4,
        )
        if split > 1:
            _finish_kernel[(triton.cdiv(M, 256),)](part, y, M, split, K, BLOCK=256)
    if keepdim:
        y = y.view([1 if d in dims else s for d, s in enumerate(shape)])
    else:
        y = y.view([s for d, s in enumerate(shape) if d not in dims])
    if out is not None:
        out.copy_(y)
        return out
    return y
