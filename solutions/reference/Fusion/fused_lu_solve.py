"""LU solve in Triton: Gaussian elimination with partial pivoting, one program per system.

Each program holds its matrix as a BLOCK x BLOCK register tile (rows and columns past n are
masked off) and its right-hand side as a BLOCK vector. Step j picks the row at or below j with
the largest |a_ij| (partial pivoting), exchanges it with row j in both, and subtracts multiples
of the pivot row from the rows below: this leaves U in the tile and L^-1 P^T b in the vector,
so L is never stored. Back substitution with U, from the last row up, then gives x. All in
float32; register-resident, so n <= 128.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _lu_solve_kernel(a_ptr, b_ptr, x_ptr, n, BLOCK: tl.constexpr):
    sys = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK)
    inside = (rows[:, None] < n) & (cols[None, :] < n)
    a = tl.load(a_ptr + sys * n * n + rows[:, None] * n + cols[None, :], mask=inside, other=0.0)
    v = tl.load(b_ptr + sys * n + rows, mask=rows < n, other=0.0)
    for j in range(0, n):
        col = tl.sum(tl.where(cols[None, :] == j, a, 0.0), axis=1)  # column j
        cand = tl.where((rows >= j) & (rows < n), tl.abs(col), -1.0)
        p = tl.argmax(cand, axis=0)  # pivot row
        row_j = tl.sum(tl.where(rows[:, None] == j, a, 0.0), axis=0)
        row_p = tl.sum(tl.where(rows[:, None] == p, a, 0.0), axis=0)
        v_j = tl.sum(tl.where(rows == j, v, 0.0), axis=0)
        v_p = tl.sum(tl.where(rows == p, v, 0.0), axis=0)
        col_p = tl.sum(tl.where(rows == p, col, 0.0), axis=0)  # the pivot a_pj
        col_j = tl.sum(tl.where(rows == j, col, 0.0), axis=0)
        col = tl.where(rows == p, col_j, col)  # column j after the exchange
        # exchange rows j and p, then eliminate below the pivot
        a = tl.where(rows[:, None] == p, row_j[None, :], a)
        v = tl.where(rows == p, v_j, v)
        mult = tl.where(rows > j, col / col_p, 0.0)
        a = tl.where(rows[:, None] == j, row_p[None, :], a - mult[:, None] * row_p[None, :])
        v = tl.where(rows == j, v_p, v - mult * v_p)
    for i in range(0, n):  # back substitution, last row first
        j = n - 1 - i
        u_col = tl.sum(tl.where(cols[None, :] == j, a, 0.0), axis=1)  # column j of U
        u_jj = tl.sum(tl.where(rows == j, u_col, 0.0), axis=0)
        x_j = tl.sum(tl.where(rows == j, v, 0.0), axis=0) / u_jj
        v = tl.where(rows == j, x_j, v - tl.where(rows < j, u_col, 0.0) * x_j)
    tl.store(x_ptr + sys * n + rows, v, mask=rows < n)


def fused_lu_solve(A, b):
    n = A.shape[-1]
    if A.shape[-2] != n or b.shape != A.shape[:-1]:
        raise ValueError(f"need A (..., n, n), b (..., n): got {tuple(A.shape)}, {tuple(b.shape)}")
    if n > 128:
        raise NotImplementedError("register-resident elimination: n <= 128")
    a = A.reshape(-1, n, n).contiguous()
    v = b.reshape(-1, n).contiguous()
    x = torch.empty(v.shape, device=A.device, dtype=torch.float32)
    block = max(triton.next_power_of_2(n), 2)
    if a.shape[0] and n:
        _lu_solve_kernel[(a.shape[0],)](a, v, x, n, BLOCK=block, num_warps=4 if block <= 32 else 8)
    return x.reshape(b.shape)
