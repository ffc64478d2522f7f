"""Determinant in Triton: LU elimination with partial pivoting, one program per matrix.

Each program holds its n x n matrix as one BLOCK x BLOCK register tile. Step k picks the row
with the largest |a_ik| (i >= k), swaps it into place (a swap flips the determinant's sign),
multiplies the running determinant by the pivot and eliminates below it (float32). The
determinant is sign * prod(U_kk); a zero pivot makes it zero. Register-resident: n <= 128.
"""

import triton
import triton.language as tl


@triton.jit
def _det_kernel(a_ptr, out_ptr, n, sab, sar, sac, BLOCK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK)
    inside = (rows[:, None] < n) & (cols[None, :] < n)
    a = tl.load(a_ptr + b * sab + rows[:, None] * sar + cols[None, :] * sac, mask=inside, other=0.0)
    a = a.to(tl.float32)
    det = tl.sum(tl.where(rows == 0, 1.0, 0.0), axis=0)  # 1.0 as a float32 scalar tensor
    for k in range(0, n):
        col = tl.sum(tl.where(cols[None, :] == k, a, 0.0), axis=1)
        p = tl.argmax(tl.where((rows >= k) & (rows < n), tl.abs(col), -1.0), axis=0)
        row_k = tl.sum(tl.where(rows[:, None] == k, a, 0.0), axis=0)
        row_p = tl.sum(tl.where(rows[:, None] == p, a, 0.0), axis=0)
        # after the swap only rows below k matter: row p takes the old row k
        a = tl.where(rows[:, None] == p, row_k[None, :], a)
        col_p = tl.sum(tl.where(rows == p, col, 0.0), axis=0)  # the pivot
        col = tl.where(rows == p, tl.sum(tl.where(rows == k, col, 0.0), axis=0), col)
        det = tl.where(p != k, -det, det) * col_p
        safe = tl.where(col_p == 0.0, 1.0, col_p)
        mult = tl.where(rows > k, col / safe, 0.0)
        a = a - mult[:, None] * tl.where(cols > k, row_p, 0.0)[None, :]
    tl.store(out_ptr + b, det)


def det(A):
    n = A.shape[-1]
    if A.shape[-2] != n:
        raise ValueError("A must be square")
    BLOCK = max(triton.next_power_of_2(n), 16)
    if BLOCK > 128:
        raise NotImplementedError("register-resident kernel: n <= 128")
    a = A.reshape(-1, n, n)
    out = A.new_empty(A.shape[:-2])
    if a.shape[0]:
        _det_kernel[(a.shape[0],)](
            a, out.view(-1), n, *a.stride(), BLOCK=BLOCK, num_warps=4 if BLOCK <= 32 else 8
        )
    return out
