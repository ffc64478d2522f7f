"""Singular value decomposition in Triton: one-sided (Hestenes) Jacobi, one program per matrix.

The program works on the tall orientation T (A itself, or A^T for a wide A; m >= n) held as a
BLOCK_M x BLOCK_N register tile, plus V (BLOCK_N x BLOCK_N, starting as I). Cyclic sweeps over
the column pairs (p, q) rotate both so that columns p and q of T become orthogonal (the classic
zeta / t = sign(zeta) / (|zeta| + sqrt(1 + zeta^2)) rotation), until a whole sweep finds every
pair orthogonal to float32 precision. Then T V-rotated = U diag(s): s_j is the norm of column j
and U its normalized columns. Columns are sorted by decreasing s with a permutation matrix
(an exact fp32 "ieee" tl.dot). For full_matrices, U is completed to a square orthogonal matrix
by Gram-Schmidt (twice) on unit vectors e_i whose residual is large enough; with a threshold
below 1/sqrt(m) enough of them always qualify. For a wide A the roles of U and V swap, which
the wrapper handles with swapped strides. float32; register-resident: m, n <= 64 here.
"""

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
def _jacobi_svd_kernel(
    a_ptr,
    x_ptr,
    s_ptr,
    y_ptr,
    m,
    n,
    tol,
    max_sweeps,
    complete_thr,
    sab,
    sar,
    sac,
    sxb,
    sxr,
    sxc,
    ssb,
    syb,
    syr,
    syc,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    FULL: tl.constexpr,
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
    # singular values and their ranks (descending; ties by position; padding keeps its place)
    sv = tl.sqrt(tl.sum(a * a, axis=0))
    sv_rows = _to_rows(sv, vrows, cols)
    ahead = (sv_rows[:, None] > sv[None, :]) | (
        (sv_rows[:, None] == sv[None, :]) & (vrows[:, None] < cols[None, :])
    )
    rank = tl.sum(tl.where(ahead & (vrows[:, None] < n), 1, 0), axis=0)
    rank = tl.where(cols < n, rank, cols)
    perm = tl.where(_to_rows(rank.to(tl.float32), vrows, cols)[:, None] == cols[None, :], 1.0, 0.0)
    u = a / tl.where(sv > 0, sv, 1.0)[None, :]
    u = tl.dot(u, perm, input_precision="ieee")  # column j moves to position rank_j
    v = tl.dot(v, perm, input_precision="ieee")
    sv = tl.sum(perm * sv_rows[:, None], axis=0)
    tl.store(s_ptr + b * ssb + cols, sv, mask=cols < n)
    vmask = (vrows[:, None] < n) & (cols[None, :] < n)
    tl.store(y_ptr + b * syb + vrows[:, None] * syr + cols[None, :] * syc, v, mask=vmask)
    if FULL:
        # embed U (m x n) into an m x m tile, then add orthonormal complement columns
        full_cols = tl.arange(0, BLOCK_M)
        embed = tl.where(vrows[:, None] == full_cols[None, :], 1.0, 0.0)
        uf = tl.dot(u, embed, input_precision="ieee")
        count = n
        for i in range(0, m):
            r = tl.where(rows == i, 1.0, 0.0)
            for _ in tl.static_range(2):
                coef = tl.sum(uf * r[:, None], axis=0)
                r = r - tl.sum(uf * coef[None, :], axis=1)
            norm = tl.sqrt(tl.sum(r * r, axis=0))
            take = (norm > complete_thr) & (count < m)
            new_col = tl.where(take, r / norm, _col(uf, full_cols, count))
            uf = tl.where(full_cols[None, :] == count, new_col[:, None], uf)
            count += take.to(tl.int32)
        fmask = (rows[:, None] < m) & (full_cols[None, :] < m)
        tl.store(x_ptr + b * sxb + rows[:, None] * sxr + full_cols[None, :] * sxc, uf, mask=fmask)
    else:
        tl.store(x_ptr + b * sxb + rows[:, None] * sxr + cols[None, :] * sxc, u, mask=inside)


def svd(A, full_matrices=True):
    *batch, m, n = A.shape
    k = min(m, n)
    wide = m < n
    a = A.reshape(-1, m, n)
    mt, nt = (n, m) if wide else (m, n)  # tall orientation T = A or A^T
    BLOCK_M, BLOCK_N = max(triton.next_power_of_2(mt), 16), max(triton.next_power_of_2(nt), 16)
    if BLOCK_M > 64:
        raise NotImplementedError("register-resident kernel: min(m, n), max(m, n) <= 64")
    U = A.new_empty((*batch, m, m if full_matrices else k))
    S = A.new_empty((*batch, k))
    Vh = A.new_empty((*batch, n if full_matrices else k, n))
    u3, s2, vh3 = U.view(-1, *U.shape[-2:]), S.view(-1, k), Vh.view(-1, *Vh.shape[-2:])
    if wide:  # A^T = X s Y^T  =>  A = Y s X^T: U = Y, Vh = X^T
        sa = (a.stride(0), a.stride(2), a.stride(1))
        sx = (vh3.stride(0), vh3.stride(2), vh3.stride(1))
        sy = (u3.stride(0), u3.stride(1), u3.stride(2))
        x, y = vh3, u3
    else:  # A = X s Y^T: U = X, Vh = Y^T
        sa = a.stride()
        sx = u3.stride()
        sy = (vh3.stride(0), vh3.stride(2), vh3.stride(1))
        x, y = u3, vh3
    if a.shape[0] and k:
        _jacobi_svd_kernel[(a.shape[0],)](
            a,
            x,
            s2,
            y,
            mt,
            nt,
            2.0**-20,
            40,
            0.5 / mt**0.5,
            *sa,
            *sx,
            s2.stride(0),
            *sy,
            BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N,
            FULL=full_matrices and mt > nt,
            num_warps=4 if BLOCK_M * BLOCK_N <= 1024 else 8,
        )
    return U, S, Vh
