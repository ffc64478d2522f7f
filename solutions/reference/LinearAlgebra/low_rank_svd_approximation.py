"""Best rank-k approximation in Triton: one-sided (Hestenes) Jacobi SVD, one program per matrix.

The program works on the tall orientation T (A itself, or A^T for a wide A; m >= n) held as a
BLOCK_M x BLOCK_N register tile, plus V (BLOCK_N x BLOCK_N, starting as I). Cyclic sweeps over
the column pairs (p, q) rotate both so that columns p and q of T become orthogonal, until a
whole sweep finds every pair orthogonal to float32 precision. Then T V = [s_1 u_1, ..., s_n u_n]
(columns of the rotated tile), so no normalization is needed: A_k = sum over the k columns of
largest norm of (s_j u_j) v_j^T, i.e. the rotated tile with the other columns zeroed times V^T
(one fp32 "ieee" tl.dot). For a wide A the product is stored transposed. float32;
register-resident: m, n <= 64 here.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _col(x, cols, j):
    """Column j of a register tile, as a vector along the tile's rows."""
    return tl.sum(tl.where(cols[None, :] == j, x, 0.0), axis=1)


@triton.jit
def _to_rows(x, rows, cols):
    """A vector laid out along the columns of a square tile, re-laid along its rows."""
    return tl.sum(tl.where(rows[:, None] == cols[None, :], x[None, :], 0.0), axis=1)


@triton.jit
def _low_rank_kernel(
    a_ptr,
    out_ptr,
    m,
    n,
    k,
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
    a = tl.load(a_ptr + b * sab + rows[:, None] * sar + cols[None, :] * sac, mask=inside, other=0.0)
    a = a.to(tl.float32)
    v = tl.where(vrows[:, None] == cols[None, :], 1.0, 0.0)
    sweep = 0
    rotated = 1
    while (rotated > 0) & (sweep < max_sweeps):
        rotated = 0
        for p in range(0, n - 1):
            ap = _col(a, cols, p)
            vp = _col(v, cols, p)
            for q in range(p + 1, n):
                aq = _col(a, cols, q)
                vq = _col(v, cols, q)
                alpha = tl.sum(ap * ap, axis=0)
                beta = tl.sum(aq * aq, axis=0)
                gamma = tl.sum(ap * aq, axis=0)
                turn = tl.abs(gamma) > tol * tl.sqrt(alpha) * tl.sqrt(beta)
                zeta = (beta - alpha) / (2.0 * tl.where(turn, gamma, 1.0))
                big = tl.abs(zeta) > 1e15  # sqrt(1 + zeta^2) = |zeta| to float32 precision
                z = tl.where(big, 0.0, zeta)
                t = tl.where(
                    big,
                    0.5 / zeta,
                    tl.where(zeta >= 0, 1.0, -1.0) / (tl.abs(z) + tl.sqrt(1.0 + z * z)),
                )
                c = tl.where(turn, 1.0 / tl.sqrt(1.0 + t * t), 1.0)
                s = tl.where(turn, c * t, 0.0)
                a = tl.where(cols[None, :] == q, (s * ap + c * aq)[:, None], a)
                v = tl.where(cols[None, :] == q, (s * vp + c * vq)[:, None], v)
                ap = c * ap - s * aq
                vp = c * vp - s * vq
                rotated += turn.to(tl.int32)
            a = tl.where(cols[None, :] == p, ap[:, None], a)
            v = tl.where(cols[None, :] == p, vp[:, None], v)
        sweep += 1
    # rank of each column by decreasing norm (ties by position); keep the k largest
    sv = tl.sqrt(tl.sum(a * a, axis=0))
    sv_rows = _to_rows(sv, vrows, cols)
    ahead = (sv_rows[:, None] > sv[None, :]) | (
        (sv_rows[:, None] == sv[None, :]) & (vrows[:, None] < cols[None, :])
    )
    rank = tl.sum(tl.where(ahead & (vrows[:, None] < n), 1, 0), axis=0)
    a = tl.where((rank < k)[None, :], a, 0.0)
    ak = tl.dot(a, tl.trans(v), input_precision="ieee")  # sum_j (s_j u_j) v_j^T
    tl.store(out_ptr + b * sob + rows[:, None] * sor + cols[None, :] * soc, ak, mask=inside)


def low_rank_svd_approximation(A, k, *, full_matrices=True, out=None):
    *batch, m, n = A.shape
    wide = m < n
    a = A.reshape(-1, m, n)
    mt, nt = (n, m) if wide else (m, n)  # tall orientation T = A or A^T
    BLOCK_M, BLOCK_N = max(triton.next_power_of_2(mt), 16), max(triton.next_power_of_2(nt), 16)
    if BLOCK_M > 64:
        raise NotImplementedError("register-resident kernel: min(m, n), max(m, n) <= 64")
    res = out if out is not None else torch.empty_like(A)
    r = res.view(-1, m, n)
    # (A^T)_k = (A_k)^T: a wide A is read and written transposed
    sa = (a.stride(0), a.stride(2), a.stride(1)) if wide else a.stride()
    so = (r.stride(0), r.stride(2), r.stride(1)) if wide else r.stride()
    if a.shape[0] and m and n:
        _low_rank_kernel[(a.shape[0],)](
            a,
            r,
            mt,
            nt,
            int(k),
            2.0**-20,
            40,
            *sa,
            *so,
            BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N,
            num_warps=4 if BLOCK_M * BLOCK_N <= 1024 else 8,
        )
    return res
