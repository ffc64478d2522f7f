"""Reduced QR in Triton: Householder reflections, one program per matrix, held in registers.

Each program loads its whole m x n matrix as one BLOCK_M x BLOCK_N tile (zero-padded). For column
k it builds the reflector v = x - alpha e_k (x = A[k:, k], alpha = -sign(x_k) ||x||, no
cancellation), applies A <- A - beta v (v^T A) to the columns >= k and keeps v in a second tile.
R is the upper triangle of the result. Q = H_0 ... H_{n-1} [I; 0] is then formed by applying
the stored reflectors to the identity in reverse order. Everything runs in float32, O(m n^2).

Size limit: the tiles live in registers, so next_pow2(m) * next_pow2(n) <= 16384 (e.g. up to
128 x 128, or 256 x 64); larger matrices are refused.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _householder_qr_kernel(
    a_ptr, q_ptr, r_ptr, m, n,
    sab, sam, san, sqb, sqm, sqn, srb, srm, srn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    inside = (rows[:, None] < m) & (cols[None, :] < n)
    a = tl.load(a_ptr + b * sab + rows[:, None] * sam + cols[None, :] * san, mask=inside, other=0.0)
    a = a.to(tl.float32)
    vs = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # reflector k in column k
    betas = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k in range(0, n):
        # x = A[k:, k] (rows above k masked out)
        x = tl.sum(tl.where(cols[None, :] == k, a, 0.0), axis=1)
        x = tl.where(rows >= k, x, 0.0)
        xk = tl.sum(tl.where(rows == k, x, 0.0), axis=0)
        norm_x = tl.sqrt(tl.sum(x * x, axis=0))
        alpha = tl.where(xk < 0, norm_x, -norm_x)  # opposite sign to x_k: no cancellation below
        v = tl.where(rows == k, xk - alpha, x)
        vv = tl.sum(v * v, axis=0)
        beta = tl.where(vv > 0, 2.0 / tl.where(vv > 0, vv, 1.0), 0.0)  # zero column: H = I
        w = tl.sum(v[:, None] * a, axis=0)  # v^T A
        w = tl.where(cols >= k, w, 0.0)  # earlier columns are already reduced
        a = a - beta * v[:, None] * w[None, :]
        vs = tl.where(cols[None, :] == k, v[:, None], vs)
        betas = tl.where(cols == k, beta, betas)
    # R: upper triangle of the reduced matrix
    r_mask = (rows[:, None] < n) & (cols[None, :] < n)
    r = tl.where(rows[:, None] <= cols[None, :], a, 0.0)
    tl.store(r_ptr + b * srb + rows[:, None] * srm + cols[None, :] * srn, r, mask=r_mask)
    # Q = H_0 H_1 ... H_{n-1} applied to the first n columns of the identity, innermost first
    q = tl.where(rows[:, None] == cols[None, :], 1.0, 0.0)
    for i in range(0, n):
        k = n - 1 - i
        v = tl.sum(tl.where(cols[None, :] == k, vs, 0.0), axis=1)
        beta = tl.sum(tl.where(cols == k, betas, 0.0), axis=0)
        w = tl.sum(v[:, None] * q, axis=0)
        q = q - beta * v[:, None] * w[None, :]
    tl.store(q_ptr + b * sqb + rows[:, None] * sqm + cols[None, :] * sqn, q, mask=inside)


def qr(A: torch.Tensor, mode: str = "reduced", out=None):
    if mode != "reduced":
        raise NotImplementedError("only mode='reduced' is implemented")
    *batch, m, n = A.shape
    if m < n:
        raise NotImplementedError("only m >= n is implemented")
    BLOCK_M, BLOCK_N = triton.next_power_of_2(m), triton.next_power_of_2(n)
    if BLOCK_M * BLOCK_N > 16384:
        raise NotImplementedError(f"matrix {m}x{n} too large for the register-resident kernel")
    a = A.reshape(-1, m, n)
    nb = a.shape[0]
    if out is not None:
        Q, R = out
    else:
        Q = torch.empty((*batch, m, n), dtype=A.dtype, device=A.device)
        R = torch.empty((*batch, n, n), dtype=A.dtype, device=A.device)
    q, r = Q.view(-1, m, n), R.view(-1, n, n)
    if nb and n:
        warps = 4 if BLOCK_M * BLOCK_N <= 4096 else (8 if BLOCK_M * BLOCK_N <= 8192 else 16)
        _householder_qr_kernel[(nb,)](
            a, q, r, m, n, *a.stride(), *q.stride(), *r.stride(),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=warps,
        )
    return Q, R
