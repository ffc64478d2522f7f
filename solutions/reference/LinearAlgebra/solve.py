"""Linear solve in Triton: Gaussian elimination with partial pivoting on [A | B], one program per
(system, block of right-hand-side columns).

Each program holds A as a BLOCK_N x BLOCK_N register tile and its BLOCK_K columns of B as a
second tile. Forward elimination with partial pivoting applies every row exchange and every
elimination step to both tiles (leaving U and L^-1 P^T B); back substitution with U, from the
last row up, then yields X. float32 throughout. A vector right-hand side (..., n) is solved as
one column. Register-resident: n <= 128.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _lu_solve_kernel(
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
    inside = (rows[:, None] < n) & (cols[None, :] < n)
    a = tl.load(a_ptr + b * sab + rows[:, None] * sar + cols[None, :] * sac, mask=inside, other=0.0)
    a = a.to(tl.float32)
    bmask = (rows[:, None] < n) & (rhs[None, :] < k)
    x = tl.load(b_ptr + b * sbb + rows[:, None] * sbr + rhs[None, :] * sbc, mask=bmask, other=0.0)
    x = x.to(tl.float32)
    for j in range(0, n):
        col = tl.sum(tl.where(cols[None, :] == j, a, 0.0), axis=1)
        p = tl.argmax(tl.where((rows >= j) & (rows < n), tl.abs(col), -1.0), axis=0)
        a_j = tl.sum(tl.where(rows[:, None] == j, a, 0.0), axis=0)
        a_p = tl.sum(tl.where(rows[:, None] == p, a, 0.0), axis=0)
        x_j = tl.sum(tl.where(rows[:, None] == j, x, 0.0), axis=0)
        x_p = tl.sum(tl.where(rows[:, None] == p, x, 0.0), axis=0)
        # after the exchange, row j holds the old row p and row p the old row j
        a = tl.where(rows[:, None] == p, a_j[None, :], a)
        x = tl.where(rows[:, None] == p, x_j[None, :], x)
        col = tl.where(rows == p, tl.sum(tl.where(rows == j, col, 0.0), axis=0), col)
        pivot = tl.sum(tl.where(cols == j, a_p, 0.0), axis=0)  # a_pj, the pivot
        mult = tl.where(rows > j, col / pivot, 0.0)
        a = tl.where(rows[:, None] == j, a_p[None, :], a - mult[:, None] * a_p[None, :])
        x = tl.where(rows[:, None] == j, x_p[None, :], x - mult[:, None] * x_p[None, :])
    for i in range(0, n):
        j = n - 1 - i
        u_col = tl.sum(tl.where(cols[None, :] == j, a, 0.0), axis=1)  # column j of U
        ujj = tl.sum(tl.where(rows == j, u_col, 0.0), axis=0)
        x_j = tl.sum(tl.where(rows[:, None] == j, x, 0.0), axis=0) / ujj
        x = tl.where(
            rows[:, None] == j,
            x_j[None, :],
            x - tl.where(rows < j, u_col, 0.0)[:, None] * x_j[None, :],
        )
    tl.store(x_ptr + b * sxb + rows[:, None] * sxr + rhs[None, :] * sxc, x, mask=bmask)


def solve(A, B):
    n = A.shape[-1]
    if A.shape[-2] != n:
        raise ValueError("A must be square")
    vector = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.shape[:-2] != A.shape[:-2] or Bm.shape[-2] != n:
        raise NotImplementedError("A (..., n, n) with B (..., n, k) or (..., n), equal batches")
    k = Bm.shape[-1]
    BLOCK_N = max(triton.next_power_of_2(n), 16)
    if BLOCK_N > 128:
        raise NotImplementedError("register-resident kernel: n <= 128")
    BLOCK_K = min(max(triton.next_power_of_2(k), 16), 64)
    a, b3 = A.reshape(-1, n, n), Bm.reshape(-1, n, k)
    X = torch.empty_like(B)
    x3 = (X.unsqueeze(-1) if vector else X).view(-1, n, k)
    grid = (a.shape[0], triton.cdiv(k, BLOCK_K))
    if a.shape[0] and k:
        _lu_solve_kernel[grid](
            a,
            b3,
            x3,
            n,
            k,
            *a.stride(),
            *b3.stride(),
            *x3.stride(),
            BLOCK_N=BLOCK_N,
            BLOCK_K=BLOCK_K,
            num_warps=4 if BLOCK_N <= 32 else 8,
        )
    return X
