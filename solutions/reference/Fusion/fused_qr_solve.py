"""QR least-squares solve in Triton: Householder reflections applied to A and b together, then
back substitution; one program per system, everything held in registers.

Each program loads its m x n matrix A and m x k right-hand side b as zero-padded tiles. For
column j it builds the reflector v = x - alpha e_j from x = A[j:, j] (alpha = -sign(x_j) ||x||,
so no cancellation) and applies H = I - beta v v^T to the remaining columns of A and to all of
b: afterwards A holds R in its upper triangle and b holds Q^T b, and Q is never formed. Back
substitution then solves R x = (Q^T b)[:n] row by row from the bottom; x is kept transposed
(k x n) so that row i of R meets it along the same axis. float32 throughout, O(m n^2 + m n k).

Size limit: next_pow2(m) * next_pow2(n) <= 16384 (e.g. 128 x 128) and k <= 64.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _qr_solve_kernel(
    a_ptr,
    b_ptr,
    x_ptr,
    m,
    n,
    k,
    sab,
    sam,
    san,
    sbb,
    sbm,
    sbk,
    sxb,
    sxn,
    sxk,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    bid = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    rhs = tl.arange(0, BLOCK_K)
    a_ok = (rows[:, None] < m) & (cols[None, :] < n)
    a = tl.load(a_ptr + bid * sab + rows[:, None] * sam + cols[None, :] * san, mask=a_ok, other=0.0)
    b_ok = (rows[:, None] < m) & (rhs[None, :] < k)
    c = tl.load(b_ptr + bid * sbb + rows[:, None] * sbm + rhs[None, :] * sbk, mask=b_ok, other=0.0)
    for j in range(0, n):
        x = tl.sum(tl.where(cols[None, :] == j, a, 0.0), axis=1)  # column j
        x = tl.where(rows >= j, x, 0.0)  # its part on and below the diagonal
        xj = tl.sum(tl.where(rows == j, x, 0.0), axis=0)
        norm = tl.sqrt(tl.sum(x * x, axis=0))
        alpha = tl.where(xj < 0, norm, -norm)  # opposite sign to x_j
        v = tl.where(rows == j, xj - alpha, x)
        vv = tl.sum(v * v, axis=0)
        beta = tl.where(vv > 0, 2.0 / tl.where(vv > 0, vv, 1.0), 0.0)  # zero column: H = I
        wa = tl.where(cols >= j, tl.sum(v[:, None] * a, axis=0), 0.0)  # v^T A, columns >= j
        a = a - beta * v[:, None] * wa[None, :]
        wc = tl.sum(v[:, None] * c, axis=0)  # v^T (Q^T b so far)
        c = c - beta * v[:, None] * wc[None, :]
    # back substitution: x_i = (c_i - sum_{j > i} R_ij x_j) / R_ii, from i = n - 1 down
    xt = tl.zeros((BLOCK_K, BLOCK_N), tl.float32)  # x transposed: column i holds x_i
    for t in range(0, n):
        i = n - 1 - t
        r = tl.sum(tl.where(rows[:, None] == i, a, 0.0), axis=0)  # row i of R
        r_ii = tl.sum(tl.where(cols == i, r, 0.0), axis=0)
        r = tl.where(cols > i, r, 0.0)
        ci = tl.sum(tl.where(rows[:, None] == i, c, 0.0), axis=0)
        xi = (ci - tl.sum(xt * r[None, :], axis=1)) / r_ii
        xt = tl.where(cols[None, :] == i, xi[:, None], xt)
    x_ok = (rhs[:, None] < k) & (cols[None, :] < n)
    tl.store(x_ptr + bid * sxb + cols[None, :] * sxn + rhs[:, None] * sxk, xt, mask=x_ok)


def fused_qr_solve(A, b):
    *batch, m, n = A.shape
    if m < n:
        raise NotImplementedError("least squares needs m >= n")
    vector = b.dim() == A.dim() - 1
    bb = b.unsqueeze(-1) if vector else b
    k = bb.shape[-1]
    BLOCK_M, BLOCK_N = triton.next_power_of_2(m), triton.next_power_of_2(n)
    BLOCK_K = max(triton.next_power_of_2(k), 2)
    if BLOCK_M * BLOCK_N > 16384 or BLOCK_K > 64:
        raise NotImplementedError(f"system {m}x{n} with {k} right-hand sides is too large")
    a3 = A.reshape(-1, m, n)
    b3 = bb.reshape(-1, m, k)
    x = torch.empty((*batch, n, k), device=A.device, dtype=torch.float32)
    x3 = x.view(-1, n, k)
    nb = a3.shape[0]
    if nb and n and k:
        tile = BLOCK_M * BLOCK_N
        warps = 4 if tile <= 4096 else (8 if tile <= 8192 else 16)
        _qr_solve_kernel[(nb,)](
            a3,
            b3,
            x3,
            m,
            n,
            k,
            *a3.stride(),
            *b3.stride(),
            *x3.stride(),
            BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N,
            BLOCK_K=BLOCK_K,
            num_warps=warps,
        )
    return x.squeeze(-1) if vector else x
