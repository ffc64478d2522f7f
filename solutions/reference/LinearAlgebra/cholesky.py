"""Cholesky factorization in Triton: right-looking outer-product form, one program per matrix.

Each program loads its n x n matrix as one BLOCK x BLOCK register tile, reading only the lower
triangle (the upper one is mirrored from it, like LAPACK's potrf with uplo='L'). Step k takes
column k of the trailing matrix, scales it by 1/sqrt(a_kk) to get column k of L, and subtracts
the outer product l l^T from the tile; O(n^3) in float32. upper=True stores L transposed.
Register-resident: n <= 128.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _cholesky_kernel(a_ptr, l_ptr, n, sab, sar, sac, slb, slr, slc, BLOCK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK)
    inside = (rows[:, None] < n) & (cols[None, :] < n)
    # read a[max(i,j), min(i,j)]: the lower triangle only, mirrored into the upper one
    hi = tl.maximum(rows[:, None], cols[None, :])
    lo = tl.minimum(rows[:, None], cols[None, :])
    a = tl.load(a_ptr + b * sab + hi * sar + lo * sac, mask=inside, other=0.0).to(tl.float32)
    L = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, n):
        col = tl.sum(tl.where(cols[None, :] == k, a, 0.0), axis=1)  # a[:, k]
        akk = tl.sum(tl.where(rows == k, col, 0.0), axis=0)
        lk = tl.where(rows >= k, col / tl.sqrt(akk), 0.0)  # column k of L (zero above k)
        L = tl.where(cols[None, :] == k, lk[:, None], L)
        a = a - lk[:, None] * lk[None, :]  # Schur complement of the leading k+1 block
    tl.store(l_ptr + b * slb + rows[:, None] * slr + cols[None, :] * slc, L, mask=inside)


def cholesky(A: torch.Tensor, upper: bool = False, out: torch.Tensor = None) -> torch.Tensor:
    n = A.shape[-1]
    if A.shape[-2] != n:
        raise ValueError("A must be square")
    BLOCK = max(triton.next_power_of_2(n), 16)
    if BLOCK > 128:
        raise NotImplementedError("register-resident kernel: n <= 128")
    a = A.reshape(-1, n, n)
    res = out if out is not None else torch.empty_like(A)
    r = res.view(-1, n, n)
    # upper: U = L^T, i.e. L written with row and column strides swapped
    srr, src = (r.stride(2), r.stride(1)) if upper else (r.stride(1), r.stride(2))
    if a.shape[0]:
        warps = 4 if BLOCK <= 32 else 8
        _cholesky_kernel[(a.shape[0],)](
            a, r, n, *a.stride(), r.stride(0), srr, src, BLOCK=BLOCK, num_warps=warps
        )
    return res
