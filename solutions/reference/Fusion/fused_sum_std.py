"""std(sum(x, dim)) in Triton: a strided reduction kernel, then a one-program two-pass std.

The wrapper permutes the kept dims to the front and the summed dims to the back and views the
input as a (K, R) matrix with strides (sk, sr) (reshape copies only when the summed dims are not
one strided block). Kernel 1: each program sums BLOCK_K rows of that matrix over R in
[BLOCK_K, BLOCK_R] tiles; the tile is laid out along whichever axis is contiguous (long R chunks
for row sums, wide K blocks for column sums), so loads stay coalesced. Kernel 2: one program
reads the K sums twice, for the mean and then for the squared deviations (stable even when the
sums share a large common part), divides by max(0, K - correction) and takes the square root.
With dtype=torch.float64 both kernels accumulate in float64.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _row_sum_kernel(
    x_ptr, s_ptr, K, R, sk, sr, F64: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_R: tl.constexpr
):
    rows = tl.program_id(0) * BLOCK_K + tl.arange(0, BLOCK_K)
    row_ok = rows < K
    acc_ty = tl.float64 if F64 else tl.float32
    acc = tl.zeros((BLOCK_K, BLOCK_R), acc_ty)
    for r0 in range(0, R, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        ok = row_ok[:, None] & (r < R)[None, :]
        addr = rows.to(tl.int64)[:, None] * sk + r.to(tl.int64)[None, :] * sr
        acc += tl.load(x_ptr + addr, mask=ok, other=0.0).to(acc_ty)
    tl.store(s_ptr + rows, tl.sum(acc, axis=1), mask=row_ok)


@triton.jit
def _std_kernel(s_ptr, y_ptr, K, dof, F64: tl.constexpr, BLOCK: tl.constexpr):
    acc_ty = tl.float64 if F64 else tl.float32
    offs0 = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), acc_ty)
    for k0 in range(0, K, BLOCK):
        offs = k0 + offs0
        acc += tl.load(s_ptr + offs, mask=offs < K, other=0.0)
    mean = tl.sum(acc, axis=0) / K
    acc = tl.zeros((BLOCK,), acc_ty)
    for k0 in range(0, K, BLOCK):
        offs = k0 + offs0
        v = tl.load(s_ptr + offs, mask=offs < K, other=0.0)
        dev = tl.where(offs < K, v - mean, 0.0)
        acc += dev * dev
    tl.store(y_ptr, tl.sqrt(tl.sum(acc, axis=0) / dof))  # dof = 0 gives inf or NaN, as torch


def fused_sum_std(input, dim=None, keepdim=False, dtype=None, correction=1, out=None):
    nd = input.dim()
    if dim is None:
        dims = list(range(nd))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = sorted({d + nd if d < 0 else d for d in dims})
    kept = [d for d in range(nd) if d not in dims]
    K = 1
    for d in kept:
        K *= input.shape[d]
    R = input.numel() // max(K, 1)
    x = input.permute(*kept, *dims).reshape(K, R)  # a view whenever the layout allows
    out_dtype = dtype if dtype is not None else input.dtype
    f64 = out_dtype == torch.float64
    sums = torch.empty(K, device=input.device, dtype=out_dtype)
    rank = nd if keepdim else nd - len(dims)
    y = torch.empty((1,) * rank if keepdim else (), device=input.device, dtype=out_dtype)
    sk, sr = x.stride()
    if sr == 1 and R > 1:  # row sums: long contiguous chunks along R
        BLOCK_K, BLOCK_R = 4, min(triton.next_power_of_2(R), 1024)
    else:  # column sums: contiguous along K, so wide K blocks
        BLOCK_K, BLOCK_R = min(triton.next_power_of_2(K), 128), min(triton.next_power_of_2(R), 16)
    if K:
        _row_sum_kernel[(triton.cdiv(K, BLOCK_K),)](
            x, sums, K, R, sk, sr, F64=f64, BLOCK_K=BLOCK_K, BLOCK_R=BLOCK_R
        )
    _std_kernel[(1,)](
        sums,
        y,
        K,
        float(max(K - correction, 0)),
        F64=f64,
        BLOCK=min(triton.next_power_of_2(max(K, 1)), 4096),
    )
    if out is not None:
        out.copy_(y)
        return out
    return y
