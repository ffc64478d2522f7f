"""Symmetric solve through LDL^T in Triton, one program per (system, block of right-hand sides).

The program loads the lower triangle of A (mirrored) as a BLOCK_N x BLOCK_N register tile and
factors it in place as A = L D L^T without pivoting: step k takes d_k = a_kk and the
multipliers l = a[k+1:, k] / d_k and subtracts l d_k l^T from the trailing matrix. The task's
inputs are diagonally dominant, so every d_k is safely away from zero (Bunch-Kaufman would not
pivot either). Then L z = b (forward, unit diagonal), y = z / d, L^T x = y (backward) on a
BLOCK_N x BLOCK_K tile of right-hand sides. float32; register-resident: n <= 128.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _ldl_solve_kernel(
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
    hi = tl.maximum(rows[:, None], cols[None, :])
    lo = tl.minimum(rows[:, None], cols[None, :])
    a = tl.load(a_ptr + b * sab + hi * sar + lo * sac, mask=inside, other=0.0).to(tl.float32)
    bmask = (rows[:, None] < n) & (rhs[None, :] < k)
    x = tl.load(b_ptr + b * sbb + rows[:, None] * sbr + rhs[None, :] * sbc, mask=bmask, other=0.0)
    x = x.to(tl.float32)
    Lt = tl.zeros((BLOCK_N, BLOCK_N), dtype=tl.float32)  # L^T: row j holds column j of L
    d = tl.where(rows < n, 0.0, 1.0)  # D; padding rows get 1 so that y = z / d stays finite
    for j in range(0, n):
        col = tl.sum(tl.where(cols[None, :] == j, a, 0.0), axis=1)
        row = tl.sum(tl.where(rows[:, None] == j, a, 0.0), axis=0)  # = col, the tile is symmetric
        dj = tl.sum(tl.where(rows == j, col, 0.0), axis=0)
        lk = tl.where(rows > j, col / dj, 0.0)  # column j of L below the diagonal
        Lt = tl.where(rows[:, None] == j, tl.where(cols > j, row / dj, 0.0)[None, :], Lt)
        d = tl.where(rows == j, dj, d)
        a = a - lk[:, None] * (dj * lk)[None, :]
        # forward substitution step j with the new column of L (unit diagonal)
        x_j = tl.sum(tl.where(rows[:, None] == j, x, 0.0), axis=0)
        x = x - lk[:, None] * x_j[None, :]
    x = x / d[:, None]
    # backward substitution L^T x = y: x_i -= L_ji x_j for i < j, L_ji = Lt[i, j]
    for i in range(0, n):
        j = n - 1 - i
        u = tl.sum(tl.where(cols[None, :] == j, Lt, 0.0), axis=1)
        x_j = tl.sum(tl.where(rows[:, None] == j, x, 0.0), axis=0)
        x = x - tl.where(rows < j, u, 0.0)[:, None] * x_j[None, :]
    tl.store(x_ptr + b * sxb + rows[:, None] * sxr + rhs[None, :] * sxc, x, mask=bmask)


def solve_symmetric_ldl(A, b, hermitian=False, out=None):
    n = A.shape[-1]
    if A.shape[-2] != n:
        raise ValueError("A must be square")
    vector = b.dim() == A.dim() - 1
    bm = b.unsqueeze(-1) if vector else b
    if bm.shape[:-2] != A.shape[:-2] or bm.shape[-2] != n:
        raise NotImplementedError("A (..., n, n) with b (..., n, k) or (..., n), equal batches")
    k = bm.shape[-1]
    BLOCK_N = max(triton.next_power_of_2(n), 16)
    if BLOCK_N > 128:
        raise NotImplementedError("register-resident kernel: n <= 128")
    BLOCK_K = min(max(triton.next_power_of_2(k), 16), 64)
    a, b3 = A.reshape(-1, n, n), bm.reshape(-1, n, k)
    X = out if out is not None else torch.empty_like(b)
    x3 = (X.unsqueeze(-1) if vector else X).view(-1, n, k)
    grid = (a.shape[0], triton.cdiv(k, BLOCK_K))
    if a.shape[0] and k:
        _ldl_solve_kernel[grid](
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
