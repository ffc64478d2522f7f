"""Cholesky solve in Triton: forward then backward substitution, one program per (system, block
of right-hand-side columns).

The program holds the factor as a BLOCK_N x BLOCK_N register tile, always oriented as the lower
factor L (an upper factor U is read transposed, L = U^T, reading only its upper triangle), and a
BLOCK_N x BLOCK_K tile of B. Forward substitution L Y = B goes column by column: row j of Y is
row j of the updated B over L_jj, then column j of L times that row is subtracted from the rows
below. Backward substitution L^T X = Y walks j downwards and subtracts row j of L (column j of
L^T) times row j of X from the rows above. Everything is float32; register-resident: n <= 128.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _cholesky_solve_kernel(
    b_ptr,
    l_ptr,
    x_ptr,
    n,
    k,
    sbb,
    sbr,
    sbc,
    slb,
    slr,
    slc,
    sxb,
    sxr,
    sxc,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    rhs = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    rows = tl.arange(0, BLOCK_N)
    cols = tl.arange(0, BLOCK_N)
    lower = (rows[:, None] < n) & (cols[None, :] <= rows[:, None])  # only this triangle is read
    L = tl.load(l_ptr + b * slb + rows[:, None] * slr + cols[None, :] * slc, mask=lower, other=0.0)
    L = L.to(tl.float32)
    bmask = (rows[:, None] < n) & (rhs[None, :] < k)
    y = tl.load(b_ptr + b * sbb + rows[:, None] * sbr + rhs[None, :] * sbc, mask=bmask, other=0.0)
    y = y.to(tl.float32)
    diag = tl.sum(tl.where(rows[:, None] == cols[None, :], L, 0.0), axis=1)
    diag = tl.where(rows < n, diag, 1.0)
    # forward: L Y = B
    for j in range(0, n):
        lj = tl.sum(tl.where(cols[None, :] == j, L, 0.0), axis=1)  # column j of L
        djj = tl.sum(tl.where(rows == j, diag, 0.0), axis=0)
        yj = tl.sum(tl.where(rows[:, None] == j, y, 0.0), axis=0) / djj  # row j of Y
        y = tl.where(
            rows[:, None] == j,
            yj[None, :],
            y - tl.where(rows[:, None] > j, lj[:, None], 0.0) * yj[None, :],
        )
    # backward: L^T X = Y
    for i in range(0, n):
        j = n - 1 - i
        lj = tl.sum(tl.where(rows[:, None] == j, L, 0.0), axis=0)  # row j of L = column j of L^T
        djj = tl.sum(tl.where(rows == j, diag, 0.0), axis=0)
        xj = tl.sum(tl.where(rows[:, None] == j, y, 0.0), axis=0) / djj
        y = tl.where(
            rows[:, None] == j,
            xj[None, :],
            y - tl.where(rows[:, None] < j, lj[:, None], 0.0) * xj[None, :],
        )
    tl.store(x_ptr + b * sxb + rows[:, None] * sxr + rhs[None, :] * sxc, y, mask=bmask)


def cholesky_solve(B, L, upper=False, out=None):
    n, k = B.shape[-2], B.shape[-1]
    if L.shape[-2:] != (n, n) or L.shape[:-2] != B.shape[:-2]:
        raise NotImplementedError("B (..., n, k) and L (..., n, n) with equal batch shapes")
    BLOCK_N = max(triton.next_power_of_2(n), 16)
    if BLOCK_N > 128:
        raise NotImplementedError("register-resident kernel: n <= 128")
    BLOCK_K = min(max(triton.next_power_of_2(k), 16), 64)
    b3, l3 = B.reshape(-1, n, k), L.reshape(-1, n, n)
    X = out if out is not None else torch.empty_like(B)
    x3 = X.view(-1, n, k)
    # an upper factor U is read as L = U^T: swap its row and column strides
    slr, slc = (l3.stride(2), l3.stride(1)) if upper else (l3.stride(1), l3.stride(2))
    grid = (b3.shape[0], triton.cdiv(k, BLOCK_K))
    if b3.shape[0] and k:
        _cholesky_solve_kernel[grid](
            b3,
            l3,
            x3,
            n,
            k,
            *b3.stride(),
            l3.stride(0),
            slr,
            slc,
            *x3.stride(),
            BLOCK_N=BLOCK_N,
            BLOCK_K=BLOCK_K,
            num_warps=4 if BLOCK_N * BLOCK_K <= 2048 else 8,
        )
    return X
