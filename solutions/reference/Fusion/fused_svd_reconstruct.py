"""Rank-r SVD reconstruction in Triton: one-sided (Hestenes) Jacobi, one program per matrix.

The program works on the tall orientation T (A, or A^T when A is wide; m >= n) held as a
BLOCK_M x BLOCK_N register tile, and on V (BLOCK_N x BLOCK_N, starting as I). Cyclic sweeps
over the column pairs (p, q) rotate both so that columns p and q of T become orthogonal (the
classic rotation t = sign(zeta) / (|zeta| + sqrt(1 + zeta^2))), until a whole sweep finds every
pair orthogonal to float32 precision. Then T = A V has orthogonal columns t_j = s_j u_j, so the
rank-r reconstruction needs no normalisation: A_r = sum over the r columns of largest norm of
t_j v_j^T = T_r V^T, one exact fp32 tl.dot (input_precision="ieee"). For a wide A this gives
(A^T)_r, which the wrapper stores transposed through swapped strides. Register-resident:
min(m, n), max(m, n) <= 64.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _col(x, cols, j):
    """Column j of a register tile, as a vector along the tile's rows."""
    return tl.sum(tl.where(cols[None, :] == j, x, 0.0), axis=1)


@triton.jit
def _jacobi_reconstruct_kernel(
    a_ptr,
    o_ptr,
    m,
    n,
    r,
    tol,
    max_sweeps,
    sab,
    sar,
    sac,
    sob,
    sor,
    soc,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    vrows = tl.arange(0, BLOCK_N)
    inside = (rows[:, None] < m) & (cols[None, :] < n)
    t = tl.load(a_ptr + b * sab + rows[:, None] * sar + cols[None, :] * sac, mask=inside, other=0.0)
    v = tl.where(vrows[:, None] == cols[None, :], 1.0, 0.0)
    sweep = 0
    rotated = 1
    while (rotated > 0) & (sweep < max_sweeps):
        rotated = 0
        for p in range(0, n - 1):
            tp = _col(t, cols, p)
            vp = _col(v, cols, p)
            for q in range(p + 1, n):
                tq = _col(t, cols, q)
                vq = _col(v, cols, q)
                alpha = tl.sum(tp * tp, axis=0)
                beta = tl.sum(tq * tq, axis=0)
                gamma = tl.sum(tp * tq, axis=0)
                turn = tl.abs(gamma) > tol * tl.sqrt(alpha) * tl.sqrt(beta)
                zeta = (beta - alpha) / (2.0 * tl.where(turn, gamma, 1.0))
                big = tl.abs(zeta) > 1e15  # sqrt(1 + zeta^2) = |zeta| in float32
                z = tl.where(big, 0.0, zeta)
                tan = tl.where(
                    big,
                    0.5 / zeta,
                    tl.where(zeta >= 0, 1.0, -1.0) / (tl.abs(z) + tl.sqrt(1.0 + z * z)),
                )
                c = tl.where(turn, 1.0 / tl.sqrt(1.0 + tan * tan), 1.0)
                s = tl.where(turn, c * tan, 0.0)
                t = tl.where(cols[None, :] == q, (s * tp + c * tq)[:, None], t)
                v = tl.where(cols[None, :] == q, (s * vp + c * vq)[:, None], v)
                tp = c * tp - s * tq
                vp = c * vp - s * vq
                rotated += turn.to(tl.int32)
            t = tl.where(cols[None, :] == p, tp[:, None], t)
            v = tl.where(cols[None, :] == p, vp[:, None], v)
        sweep += 1
    # rank of each column by norm (descending, ties by position); keep the r largest
    norm = tl.sqrt(tl.sum(t * t, axis=0))
    norm_rows = tl.sum(tl.where(vrows[:, None] == cols[None, :], norm[None, :], 0.0), axis=1)
    ahead = (norm_rows[:, None] > norm[None, :]) | (
        (norm_rows[:, None] == norm[None, :]) & (vrows[:, None] < cols[None, :])
    )
    rank = tl.sum(tl.where(ahead & (vrows[:, None] < n), 1, 0), axis=0)
    keep = (rank < r) & (cols < n)
    t = tl.where(keep[None, :], t, 0.0)
    out = tl.dot(t, tl.trans(v), input_precision="ieee")  # sum_j t_j v_j^T over kept j
    tl.store(o_ptr + b * sob + rows[:, None] * sor + cols[None, :] * soc, out, mask=inside)


def fused_svd_reconstruct(A, rank=None):
    *batch, m, n = A.shape
    k = min(m, n)
    r = k if rank is None else int(rank)
    wide = m < n
    a = A.reshape(-1, m, n)
    out = torch.empty((*batch, m, n), device=A.device, dtype=torch.float32)
    o = out.view(-1, m, n)
    mt, nt = (n, m) if wide else (m, n)  # tall orientation T = A or A^T
    BLOCK_M, BLOCK_N = max(triton.next_power_of_2(mt), 16), max(triton.next_power_of_2(nt), 16)
    if BLOCK_M > 64:
        raise NotImplementedError("register-resident kernel: min(m, n), max(m, n) <= 64")
    if wide:  # read A^T and write (A^T)_r transposed, both by swapping strides
        sa = (a.stride(0), a.stride(2), a.stride(1))
        so = (o.stride(0), o.stride(2), o.stride(1))
    else:
        sa, so = a.stride(), o.stride()
    if a.shape[0] and k:
        _jacobi_reconstruct_kernel[(a.shape[0],)](
            a,
            o,
            mt,
            nt,
            r,
            2.0**-21,
            30,
            *sa,
            *so,
            BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N,
            num_warps=4 if BLOCK_M * BLOCK_N <= 1024 else 8,
        )
    return out
