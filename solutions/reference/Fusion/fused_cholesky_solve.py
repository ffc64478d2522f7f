"""Cholesky factorization and the two triangular solves in one Triton program per system.

Each program keeps its n x n matrix A (lower triangle, mirrored) and its n x k right-hand side
in registers. The factor is built column by column (right-looking: column k of L is the trailing
matrix's column scaled by 1/sqrt(a_kk); the outer product l l^T is then subtracted). The forward
solve L Y = B eliminates one row of B per step (Y_j = B_j / L_jj, then B_i -= L_ij Y_j below j),
and the backward solve L^T X = Y runs the same way from the last row up, using row j of L as
column j of L^T. Everything is float32; O(n^3 + n^2 k) per system. Register-resident: n <= 128.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _cholesky_solve_kernel(
    a_ptr,
    b_ptr,
    x_ptr,
    n,
    k,
    sab,
    sar,
    sac,
    sbb,
    sbr,
    sbc,
    BLOCK: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK)
    rhs = tl.arange(0, BLOCK_K)
    inside = (rows[:, None] < n) & (cols[None, :] < n)
    hi = tl.maximum(rows[:, None], cols[None, :])  # read the lower triangle only
    lo = tl.minimum(rows[:, None], cols[None, :])
    a = tl.load(a_ptr + pid * sab + hi * sar + lo * sac, mask=inside, other=0.0).to(tl.float32)

    L = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for j in range(0, n):
        col = tl.sum(tl.where(cols[None, :] == j, a, 0.0), axis=1)  # a[:, j]
        ajj = tl.sum(tl.where(rows == j, col, 0.0), axis=0)
        lj = tl.where(rows >= j, col / tl.sqrt(ajj), 0.0)  # column j of L
        L = tl.where(cols[None, :] == j, lj[:, None], L)
        a = a - lj[:, None] * lj[None, :]  # Schur complement

    b_mask = (rows[:, None] < n) & (rhs[None, :] < k)
    B = tl.load(
        b_ptr + pid * sbb + rows[:, None] * sbr + rhs[None, :] * sbc, mask=b_mask, other=0.0
    ).to(tl.float32)
    for j in range(0, n):  # forward: L Y = B
        lcol = tl.sum(tl.where(cols[None, :] == j, L, 0.0), axis=1)  # L[:, j]
        ljj = tl.sum(tl.where(rows == j, lcol, 0.0), axis=0)
        yj = tl.sum(tl.where(rows[:, None] == j, B, 0.0), axis=0) / ljj  # row j of Y
        below = tl.where(rows > j, lcol, 0.0)
        B = tl.where(rows[:, None] == j, yj[None, :], B - below[:, None] * yj[None, :])
    for jj in range(0, n):  # backward: L^T X = Y, last row first
        j = n - 1 - jj
        lrow = tl.sum(tl.where(rows[:, None] == j, L, 0.0), axis=0)  # L[j, :] = (L^T)[:, j]
        ljj = tl.sum(tl.where(cols == j, lrow, 0.0), axis=0)
        xj = tl.sum(tl.where(rows[:, None] == j, B, 0.0), axis=0) / ljj
        above = tl.where(cols < j, lrow, 0.0)
        B = tl.where(rows[:, None] == j, xj[None, :], B - above[:, None] * xj[None, :])
    tl.store(x_ptr + pid * n * k + rows[:, None] * k + rhs[None, :], B, mask=b_mask)


def fused_cholesky_solve(A: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    n, k = A.shape[-1], b.shape[-1]
    if A.shape[-2] != n or b.shape[-2] != n:
        raise ValueError(f"shapes do not fit: A {tuple(A.shape)}, b {tuple(b.shape)}")
    batch = torch.broadcast_shapes(A.shape[:-2], b.shape[:-2])
    BLOCK = max(triton.next_power_of_2(n), 16)
    BLOCK_K = max(triton.next_power_of_2(k), 16)
    if BLOCK > 128 or BLOCK_K > 128:
        raise NotImplementedError("register-resident kernel: n, k <= 128")
    a = A.expand(*batch, n, n).reshape(-1, n, n)  # a view unless A was broadcast
    bb = b.expand(*batch, n, k).reshape(-1, n, k)
    x = torch.empty((*batch, n, k), device=A.device, dtype=torch.float32)
    count = a.shape[0]
    if count and n and k:
        _cholesky_solve_kernel[(count,)](
            a,
            bb,
            x,
            n,
            k,
            *a.stride(),
            *bb.stride(),
            BLOCK=BLOCK,
            BLOCK_K=BLOCK_K,
            num_warps=4 if BLOCK <= 32 else 8,
        )
    return x
