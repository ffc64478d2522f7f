"""Eigendecomposition in Triton for real matrices with real eigenvalues, one program per matrix.

Standard dense path, all in one BLOCK x BLOCK register tile per matrix (float32):
1. Householder reduction to upper Hessenberg form H = Q^T A Q (Q accumulated).
2. Shifted QR iterations on the active window H[:hi+1, :hi+1]: each step subtracts a Wilkinson
   shift (the eigenvalue of the trailing 2x2 block nearer its last entry; the last entry itself
   if the pair is complex, and an exceptional shift every 10th step without progress), factors
   with hi Givens rotations on the rows, multiplies back on the columns (H <- R Q + mu) and
   accumulates the rotations into Q. The rotations act on whole rows and columns, so
   A = Q T Q^T holds throughout. When H[hi, hi-1] is negligible, hi moves up (deflation).
3. T is then upper triangular with the eigenvalues on its diagonal (the task guarantees real,
   distinct ones). Eigenvectors of T come from back substitution (Y upper triangular, unit
   diagonal, row by row from the bottom), those of A are Q Y (an fp32 "ieee" tl.dot),
   normalized to unit length. Results are written into complex64 outputs (imaginary part 0)
   through their float32 view_as_real views. Register-resident: n <= 64.
"""

import torch
import triton
import triton.language as tl

EPS = 2.0**-23  # float32 unit roundoff (relative spacing at 1)


@triton.jit
def _row(x, rows, i):
    return tl.sum(tl.where(rows[:, None] == i, x, 0.0), axis=0)


@triton.jit
def _col(x, cols, j):
    return tl.sum(tl.where(cols[None, :] == j, x, 0.0), axis=1)


@triton.jit
def _at(vec, idx, i):
    return tl.sum(tl.where(idx == i, vec, 0.0), axis=0)


@triton.jit
def _hessenberg(a, q, rows, cols, n):
    for k in range(0, n - 2):
        x = tl.where(rows > k, _col(a, cols, k), 0.0)
        xk = _at(x, rows, k + 1)
        norm = tl.sqrt(tl.sum(x * x, axis=0))
        alpha = tl.where(xk < 0, norm, -norm)
        v = tl.where(rows == k + 1, xk - alpha, x)
        vv = tl.sum(v * v, axis=0)
        beta = tl.where(vv > 0, 2.0 / tl.where(vv > 0, vv, 1.0), 0.0)
        vc = tl.sum(
            tl.where(rows[:, None] == cols[None, :], v[:, None], 0.0), axis=0
        )  # v along cols
        a = a - beta * v[:, None] * tl.sum(v[:, None] * a, axis=0)[None, :]  # H A
        a = a - beta * tl.sum(a * vc[None, :], axis=1)[:, None] * vc[None, :]  # (H A) H
        q = q - beta * tl.sum(q * vc[None, :], axis=1)[:, None] * vc[None, :]  # Q H
    return a, q


@triton.jit
def _qr_step(a, q, rows, cols, hi, mu, BLOCK: tl.constexpr):
    """One explicitly shifted QR step on the window [0, hi]: H - mu = G^T R, H <- R G^T + mu."""
    window = (rows[:, None] == cols[None, :]) & (rows[:, None] <= hi)
    a = tl.where(window, a - mu, a)
    cs = tl.zeros((BLOCK,), dtype=tl.float32)
    sn = tl.zeros((BLOCK,), dtype=tl.float32)
    for j in range(0, hi):
        rj = _row(a, rows, j)
        rj1 = _row(a, rows, j + 1)
        x = _at(rj, cols, j)
        y = _at(rj1, cols, j)
        r = tl.sqrt(x * x + y * y)
        c = tl.where(r > 0, x / tl.where(r > 0, r, 1.0), 1.0)
        s = tl.where(r > 0, y / tl.where(r > 0, r, 1.0), 0.0)
        a = tl.where(
            rows[:, None] == j,
            (c * rj + s * rj1)[None, :],
            tl.where(rows[:, None] == j + 1, (c * rj1 - s * rj)[None, :], a),
        )
        cs = tl.where(rows == j, c, cs)
        sn = tl.where(rows == j, s, sn)
    for j in range(0, hi):
        c = _at(cs, rows, j)
        s = _at(sn, rows, j)
        cj = _col(a, cols, j)
        cj1 = _col(a, cols, j + 1)
        a = tl.where(
            cols[None, :] == j,
            (c * cj + s * cj1)[:, None],
            tl.where(cols[None, :] == j + 1, (c * cj1 - s * cj)[:, None], a),
        )
        qj = _col(q, cols, j)
        qj1 = _col(q, cols, j + 1)
        q = tl.where(
            cols[None, :] == j,
            (c * qj + s * qj1)[:, None],
            tl.where(cols[None, :] == j + 1, (c * qj1 - s * qj)[:, None], q),
        )
    a = tl.where(window, a + mu, a)
    return a, q


@triton.jit
def _eig_kernel(
    a_ptr,
    w_ptr,
    v_ptr,
    n,
    max_iter,
    eps,
    sab,
    sar,
    sac,
    swb,
    swn,
    swc,
    svb,
    svr,
    svc,
    svx,
    BLOCK: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK)
    inside = (rows[:, None] < n) & (cols[None, :] < n)
    a = tl.load(a_ptr + b * sab + rows[:, None] * sar + cols[None, :] * sac, mask=inside, other=0.0)
    a = a.to(tl.float32)
    q = tl.where(rows[:, None] == cols[None, :], 1.0, 0.0)
    a, q = _hessenberg(a, q, rows, cols, n)
    anorm = tl.max(tl.max(tl.abs(a), axis=1), axis=0)
    hi = n - 1
    it = 0
    stuck = 0  # steps since the last deflation
    while (hi > 0) & (it < max_iter):
        r_hi = _row(a, rows, hi)
        r_lo = _row(a, rows, hi - 1)
        sub = _at(r_hi, cols, hi - 1)
        d = _at(r_hi, cols, hi)
        c0 = _at(r_lo, cols, hi - 1)
        b0 = _at(r_lo, cols, hi)
        thr = eps * (tl.abs(d) + tl.abs(c0))
        thr = tl.where(thr > 0, thr, eps * anorm)
        if tl.abs(sub) <= thr:
            a = tl.where((rows[:, None] == hi) & (cols[None, :] == hi - 1), 0.0, a)
            hi -= 1
            stuck = 0
        else:
            half = (c0 - d) * 0.5
            disc = half * half + b0 * sub
            root = tl.sqrt(tl.maximum(disc, 0.0))
            m1 = d + half + root
            m2 = d + half - root
            mu = tl.where(tl.abs(m1 - d) < tl.abs(m2 - d), m1, m2)
            mu = tl.where(disc >= 0, mu, d)
            mu = tl.where(stuck % 10 == 9, d + 0.75 * tl.abs(sub), mu)  # exceptional shift
            a, q = _qr_step(a, q, rows, cols, hi, mu, BLOCK)
            stuck += 1
        it += 1
    # eigenvectors of the triangular T: T Y = Y diag(lam), Y unit upper triangular
    t = tl.where(rows[:, None] <= cols[None, :], a, 0.0)
    lam_c = tl.sum(tl.where(rows[:, None] == cols[None, :], t, 0.0), axis=0)
    lam_r = tl.sum(tl.where(rows[:, None] == cols[None, :], t, 0.0), axis=1)
    tt = tl.trans(t)
    y = tl.where(rows[:, None] == cols[None, :], 1.0, 0.0)
    for ii in range(0, n - 1):
        i = n - 2 - ii
        t_i = tl.where(rows > i, _col(tt, cols, i), 0.0)  # T[i, j] for j > i, along rows
        num = tl.sum(t_i[:, None] * y, axis=0)
        den = _at(lam_r, rows, i) - lam_c
        den = tl.where(den == 0, eps * anorm, den)
        y_i = tl.where(cols > i, -num / den, tl.where(cols == i, 1.0, 0.0))
        y = tl.where(rows[:, None] == i, y_i[None, :], y)
    vec = tl.dot(q, y, input_precision="ieee")
    vec = tl.where(inside, vec, 0.0)
    norm = tl.sqrt(tl.sum(vec * vec, axis=0))
    vec = vec / tl.where(norm > 0, norm, 1.0)[None, :]
    wb = w_ptr + b * swb + cols * swn
    tl.store(wb, lam_c, mask=cols < n)
    tl.store(wb + swc, tl.zeros_like(lam_c), mask=cols < n)
    vb = v_ptr + b * svb + rows[:, None] * svr + cols[None, :] * svc
    tl.store(vb, vec, mask=inside)
    tl.store(vb + svx, tl.zeros_like(vec), mask=inside)


def eig(A):
    n = A.shape[-1]
    if A.shape[-2] != n:
        raise ValueError("A must be square")
    BLOCK = max(triton.next_power_of_2(n), 16)
    if BLOCK > 64:
        raise NotImplementedError("register-resident kernel: n <= 64")
    a = A.reshape(-1, n, n)
    W = torch.empty(A.shape[:-1], dtype=torch.complex64, device=A.device)
    V = torch.empty(A.shape, dtype=torch.complex64, device=A.device)
    w = torch.view_as_real(W).view(-1, n, 2)  # float32 views: (real, imaginary) pairs
    v = torch.view_as_real(V).view(-1, n, n, 2)
    if a.shape[0]:
        _eig_kernel[(a.shape[0],)](
            a,
            w,
            v,
            n,
            40 * n,
            EPS,
            *a.stride(),
            *w.stride(),
            *v.stride(),
            BLOCK=BLOCK,
            num_warps=4 if BLOCK <= 32 else 8,
        )
    return W, V
