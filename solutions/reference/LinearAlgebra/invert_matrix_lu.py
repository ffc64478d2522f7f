"""Matrix inverse through LU in Triton: Gaussian elimination on [A | I], one program per matrix.

Each program holds A and the identity as two BLOCK x BLOCK register tiles. Forward elimination
with partial pivoting (or none, PIVOT=False) applies every row exchange and every elimination
step to both tiles, leaving U in the first and L^-1 P^T in the second. Back substitution with U,
row by row from the bottom, turns the second tile into U^-1 L^-1 P^T = A^-1. float32 throughout.
Register-resident: n <= 128.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _lu_inverse_kernel(
    a_ptr, x_ptr, n, sab, sar, sac, sxb, sxr, sxc, BLOCK: tl.constexpr, PIVOT: tl.constexpr
):
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK)
    inside = (rows[:, None] < n) & (cols[None, :] < n)
    a = tl.load(a_ptr + b * sab + rows[:, None] * sar + cols[None, :] * sac, mask=inside, other=0.0)
    a = a.to(tl.float32)
    x = tl.where(rows[:, None] == cols[None, :], 1.0, 0.0)
    for k in range(0, n):
        if PIVOT:
            col = tl.sum(tl.where(cols[None, :] == k, a, 0.0), axis=1)
            p = tl.argmax(tl.where((rows >= k) & (rows < n), tl.abs(col), -1.0), axis=0)
            a_k = tl.sum(tl.where(rows[:, None] == k, a, 0.0), axis=0)
            a_p = tl.sum(tl.where(rows[:, None] == p, a, 0.0), axis=0)
            a = tl.where(
                rows[:, None] == k, a_p[None, :], tl.where(rows[:, None] == p, a_k[None, :], a)
            )
            x_k = tl.sum(tl.where(rows[:, None] == k, x, 0.0), axis=0)
            x_p = tl.sum(tl.where(rows[:, None] == p, x, 0.0), axis=0)
            x = tl.where(
                rows[:, None] == k, x_p[None, :], tl.where(rows[:, None] == p, x_k[None, :], x)
            )
        col = tl.sum(tl.where(cols[None, :] == k, a, 0.0), axis=1)
        pivot = tl.sum(tl.where(rows == k, col, 0.0), axis=0)
        mult = tl.where(rows > k, col / pivot, 0.0)
        a_k = tl.sum(tl.where(rows[:, None] == k, a, 0.0), axis=0)
        x_k = tl.sum(tl.where(rows[:, None] == k, x, 0.0), axis=0)
        a = a - mult[:, None] * a_k[None, :]
        x = x - mult[:, None] * x_k[None, :]
    # back substitution U X = Y, last row first
    for i in range(0, n):
        k = n - 1 - i
        u_col = tl.sum(tl.where(cols[None, :] == k, a, 0.0), axis=1)  # column k of U
        ukk = tl.sum(tl.where(rows == k, u_col, 0.0), axis=0)
        x_k = tl.sum(tl.where(rows[:, None] == k, x, 0.0), axis=0) / ukk
        x = tl.where(
            rows[:, None] == k,
            x_k[None, :],
            x - tl.where(rows < k, u_col, 0.0)[:, None] * x_k[None, :],
        )
    tl.store(x_ptr + b * sxb + rows[:, None] * sxr + cols[None, :] * sxc, x, mask=inside)


def invert_matrix_lu(A, *, pivot=True, out=None):
    n = A.shape[-1]
    if A.shape[-2] != n:
        raise ValueError("A must be square")
    BLOCK = max(triton.next_power_of_2(n), 16)
    if BLOCK > 128:
        raise NotImplementedError("register-resident kernel: n <= 128")
    a = A.reshape(-1, n, n)
    X = out if out is not None else torch.empty_like(A)
    x = X.view(-1, n, n)
    if a.shape[0]:
        _lu_inverse_kernel[(a.shape[0],)](
            a,
            x,
            n,
            *a.stride(),
            *x.stride(),
            BLOCK=BLOCK,
            PIVOT=pivot,
            num_warps=4 if BLOCK <= 32 else 8,
        )
    return X
