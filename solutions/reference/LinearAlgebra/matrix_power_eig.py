"""Matrix power through the eigendecomposition in Triton, one program per matrix.

All in BLOCK x BLOCK register tiles, float32 (the task guarantees real, distinct eigenvalues):
1. Householder reduction to Hessenberg form and shifted QR iterations (Wilkinson shifts,
   Givens rotations, deflation from the bottom) give A = Q T Q^T with T upper triangular.
2. Back substitution gives the eigenvectors Y of T, and V = Q Y (fp32 "ieee" tl.dot).
3. V^-1 by Gauss-Jordan elimination with partial pivoting on [V | I].
4. lam^k = |lam|^k (exp2(k log2|lam|)) times the principal phase e^{i pi k} for a negative lam
   (cos and sin of pi k are Python scalars computed from k by the wrapper), and
   A^k = V diag(lam^k) V^-1 as two fp32 products (real and imaginary parts), written into the
   complex64 output through its float32 view_as_real view. Register-resident: n <= 64.
"""

import math

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
def _inverse(x, rows, cols, n):
    """Gauss-Jordan with partial pivoting: returns x^-1 (x is a register tile)."""
    inv = tl.where(rows[:, None] == cols[None, :], 1.0, 0.0)
    for k in range(0, n):
        col = _col(x, cols, k)
        p = tl.argmax(tl.where((rows >= k) & (rows < n), tl.abs(col), -1.0), axis=0)
        x_k = _row(x, rows, k)
        x_p = _row(x, rows, p)
        i_k = _row(inv, rows, k)
        i_p = _row(inv, rows, p)
        x = tl.where(rows[:, None] == p, x_k[None, :], x)  # old row k moves to row p
        inv = tl.where(rows[:, None] == p, i_k[None, :], inv)
        col = tl.where(rows == p, _at(col, rows, k), col)
        pivot = _at(x_p, cols, k)
        mult = tl.where(rows > k, col / pivot, 0.0)
        x = tl.where(rows[:, None] == k, x_p[None, :], x - mult[:, None] * x_p[None, :])
        inv = tl.where(rows[:, None] == k, i_p[None, :], inv - mult[:, None] * i_p[None, :])
    for ii in range(0, n):
        k = n - 1 - ii
        u_col = _col(x, cols, k)
        i_k = _row(inv, rows, k) / _at(u_col, rows, k)
        inv = tl.where(
            rows[:, None] == k,
            i_k[None, :],
            inv - tl.where(rows < k, u_col, 0.0)[:, None] * i_k[None, :],
        )
    return inv


@triton.jit
def _matrix_power_kernel(
    a_ptr,
    out_ptr,
    n,
    k,
    phase_re,
    phase_im,
    max_iter,
    eps,
    sab,
    sar,
    sac,
    sob,
    sor,
    soc,
    sox,
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
    stuck = 0
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
    t = tl.where(rows[:, None] <= cols[None, :], a, 0.0)
    lam_c = tl.sum(tl.where(rows[:, None] == cols[None, :], t, 0.0), axis=0)
    lam_r = tl.sum(tl.where(rows[:, None] == cols[None, :], t, 0.0), axis=1)
    tt = tl.trans(t)
    y = tl.where(rows[:, None] == cols[None, :], 1.0, 0.0)
    for ii in range(0, n - 1):
        i = n - 2 - ii
        t_i = tl.where(rows > i, _col(tt, cols, i), 0.0)
        num = tl.sum(t_i[:, None] * y, axis=0)
        den = _at(lam_r, rows, i) - lam_c
        den = tl.where(den == 0, eps * anorm, den)
        y_i = tl.where(cols > i, -num / den, tl.where(cols == i, 1.0, 0.0))
        y = tl.where(rows[:, None] == i, y_i[None, :], y)
    v = tl.dot(q, y, input_precision="ieee")  # eigenvectors (any scaling cancels below)
    v = tl.where(inside, v, tl.where(rows[:, None] == cols[None, :], 1.0, 0.0))  # pad with I
    v_inv = _inverse(v, rows, cols, n)
    mag = tl.exp2(k * tl.log2(tl.where(cols < n, tl.abs(lam_c), 1.0)))  # padding: 1^k
    p_re = tl.where(cols < n, tl.where(lam_c < 0, mag * phase_re, mag), 0.0)
    p_im = tl.where((cols < n) & (lam_c < 0), mag * phase_im, 0.0)
    re = tl.dot(v * p_re[None, :], v_inv, input_precision="ieee")
    im = tl.dot(v * p_im[None, :], v_inv, input_precision="ieee")
    ob = out_ptr + b * sob + rows[:, None] * sor + cols[None, :] * soc
    tl.store(ob, re, mask=inside)
    tl.store(ob + sox, im, mask=inside)


def matrix_power_eig(A: torch.Tensor, k: float, *, out: torch.Tensor = None) -> torch.Tensor:
    n = A.shape[-1]
    if A.shape[-2] != n:
        raise ValueError("A must be square")
    BLOCK = max(triton.next_power_of_2(n), 16)
    if BLOCK > 64:
        raise NotImplementedError("register-resident kernel: n <= 64")
    a = A.reshape(-1, n, n)
    res = out if out is not None else torch.empty(A.shape, dtype=torch.complex64, device=A.device)
    r = torch.view_as_real(res).view(-1, n, n, 2)  # float32 view: (real, imaginary) pairs
    k = float(k)
    # principal branch for a negative eigenvalue: (-x)^k = x^k e^{i pi k}
    phase_re, phase_im = math.cos(math.pi * k), math.sin(math.pi * k)
    if a.shape[0]:
        _matrix_power_kernel[(a.shape[0],)](
            a,
            r,
            n,
            k,
            phase_re,
            phase_im,
            40 * n,
            EPS,
            *a.stride(),
            *r.stride(),
            BLOCK=BLOCK,
            num_warps=4 if BLOCK <= 32 else 8,
        )
    return res
