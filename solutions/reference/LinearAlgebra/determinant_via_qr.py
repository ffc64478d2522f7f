"""Determinant through Householder QR in Triton, one program per matrix.

Each program holds its n x n matrix as one BLOCK x BLOCK register tile and reduces it to R with
Householder reflections, as in a QR factorization, without forming Q. For column k the reflector
maps x = A[k:, k] to alpha e_k with alpha = -sign(x_k) ||x|| (no cancellation); each reflector
has determinant -1, so det(A) = prod_k (-1) * R_kk = prod_k (-alpha_k), where a zero column
(x = 0) gives a zero factor. Everything runs in float32. Register-resident: n <= 128.
"""

import triton
import triton.language as tl


@triton.jit
def _qr_det_kernel(a_ptr, out_ptr, n, sab, sar, sac, BLOCK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK)
    inside = (rows[:, None] < n) & (cols[None, :] < n)
    a = tl.load(a_ptr + b * sab + rows[:, None] * sar + cols[None, :] * sac, mask=inside, other=0.0)
    a = a.to(tl.float32)
    det = tl.sum(tl.where(rows == 0, 1.0, 0.0), axis=0)  # 1.0 as a float32 scalar tensor
    for k in range(0, n):
        x = tl.sum(tl.where(cols[None, :] == k, a, 0.0), axis=1)
        x = tl.where(rows >= k, x, 0.0)
        xk = tl.sum(tl.where(rows == k, x, 0.0), axis=0)
        norm_x = tl.sqrt(tl.sum(x * x, axis=0))
        alpha = tl.where(xk < 0, norm_x, -norm_x)
        det = det * -alpha  # det(H_k) * R_kk
        v = tl.where(rows == k, xk - alpha, x)
        vv = tl.sum(v * v, axis=0)
        beta = tl.where(vv > 0, 2.0 / tl.where(vv > 0, vv, 1.0), 0.0)
        w = tl.sum(v[:, None] * a, axis=0)  # v^T A
        w = tl.where(cols > k, w, 0.0)  # only the trailing columns are still needed
        a = a - beta * v[:, None] * w[None, :]
    tl.store(out_ptr + b, det)


def determinant_via_qr(A, *, mode="reduced", out=None):
    n = A.shape[-1]
    if A.shape[-2] != n:
        raise ValueError("A must be square")
    BLOCK = max(triton.next_power_of_2(n), 16)
    if BLOCK > 128:
        raise NotImplementedError("register-resident kernel: n <= 128")
    a = A.reshape(-1, n, n)
    if out is None:
        out = A.new_empty(A.shape[:-2])
    if a.shape[0]:
        _qr_det_kernel[(a.shape[0],)](
            a, out.view(-1), n, *a.stride(), BLOCK=BLOCK, num_warps=4 if BLOCK <= 32 else 8
        )
    return out
