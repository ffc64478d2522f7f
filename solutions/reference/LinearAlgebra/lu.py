"""LU factorization with partial pivoting in Triton, one program per matrix.

Each program holds its m x n matrix as one BLOCK_M x BLOCK_N register tile. Step k picks the
row with the largest |a_ik| (i >= k), swaps it with row k (tracking the permutation as a vector
of original row numbers), stores the multipliers a_ik / a_kk below the diagonal of column k and
subtracts multiplier x row k from the rows below (right-looking elimination, float32). At the
end the strict lower part holds L, the upper part U, and P[perm[j], j] = 1 so that A = P L U.
With pivot=False the row search is compiled out. Register-resident: BLOCK_M * BLOCK_N <= 16384.
"""

import triton
import triton.language as tl


@triton.jit
def _lu_kernel(
    a_ptr,
    p_ptr,
    l_ptr,
    u_ptr,
    m,
    n,
    kmin,
    sab,
    sam,
    san,
    spb,
    spm,
    spn,
    slb,
    slm,
    sln,
    sub,
    sum_,
    sun,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    PIVOT: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    inside = (rows[:, None] < m) & (cols[None, :] < n)
    a = tl.load(a_ptr + b * sab + rows[:, None] * sam + cols[None, :] * san, mask=inside, other=0.0)
    a = a.to(tl.float32)
    perm = rows  # perm[i] = row of A now in position i
    for k in range(0, kmin):
        col = tl.sum(tl.where(cols[None, :] == k, a, 0.0), axis=1)
        if PIVOT:
            cand = tl.where((rows >= k) & (rows < m), tl.abs(col), -1.0)
            p = tl.argmax(cand, axis=0)
            row_k = tl.sum(tl.where(rows[:, None] == k, a, 0.0), axis=0)
            row_p = tl.sum(tl.where(rows[:, None] == p, a, 0.0), axis=0)
            a = tl.where(
                rows[:, None] == k, row_p[None, :], tl.where(rows[:, None] == p, row_k[None, :], a)
            )
            perm_k = tl.sum(tl.where(rows == k, perm, 0), axis=0)
            perm_p = tl.sum(tl.where(rows == p, perm, 0), axis=0)
            perm = tl.where(rows == k, perm_p, tl.where(rows == p, perm_k, perm))
            col = tl.sum(tl.where(cols[None, :] == k, a, 0.0), axis=1)
        pivot = tl.sum(tl.where(rows == k, col, 0.0), axis=0)
        safe = tl.where(pivot == 0.0, 1.0, pivot)
        nonzero = tl.where(pivot == 0.0, 0.0, 1.0)  # a zero pivot leaves the rows below as they are
        mult = tl.where(rows > k, col / safe, 0.0) * nonzero
        row_k = tl.sum(tl.where(rows[:, None] == k, a, 0.0), axis=0)
        row_k = tl.where(cols > k, row_k, 0.0)
        a = a - mult[:, None] * row_k[None, :]
        a = tl.where((cols[None, :] == k) & (rows[:, None] > k), mult[:, None], a)
    # L: strict lower part (first kmin columns) plus a unit diagonal
    lmask = (rows[:, None] < m) & (cols[None, :] < kmin)
    L = tl.where(
        rows[:, None] > cols[None, :], a, tl.where(rows[:, None] == cols[None, :], 1.0, 0.0)
    )
    tl.store(l_ptr + b * slb + rows[:, None] * slm + cols[None, :] * sln, L, mask=lmask)
    umask = (rows[:, None] < kmin) & (cols[None, :] < n)
    U = tl.where(rows[:, None] <= cols[None, :], a, 0.0)
    tl.store(u_ptr + b * sub + rows[:, None] * sum_ + cols[None, :] * sun, U, mask=umask)
    if PIVOT:
        # P[r, c] = 1 where perm[c] == r; written in BLOCK_M-wide column chunks of a P row block
        pc = tl.arange(0, BLOCK_M)
        perm_c = tl.sum(tl.where(rows[:, None] == pc[None, :], perm[:, None], 0), axis=0)
        P = tl.where(rows[:, None] == perm_c[None, :], 1.0, 0.0)
        pmask = (rows[:, None] < m) & (pc[None, :] < m)
        tl.store(p_ptr + b * spb + rows[:, None] * spm + pc[None, :] * spn, P, mask=pmask)


def lu(A, pivot=True, out=None):
    *batch, m, n = A.shape
    k = min(m, n)
    BLOCK_M, BLOCK_N = max(triton.next_power_of_2(m), 16), max(triton.next_power_of_2(n), 16)
    if BLOCK_M * BLOCK_N > 16384:
        raise NotImplementedError("register-resident kernel: BLOCK_M * BLOCK_N <= 16384")
    a = A.reshape(-1, m, n)
    if out is not None:
        P, L, U = out
    else:
        P = A.new_empty((*batch, m, m) if pivot else (0,))
        L, U = A.new_empty((*batch, m, k)), A.new_empty((*batch, k, n))
    l3, u3 = L.view(-1, m, k), U.view(-1, k, n)
    p3 = P.view(-1, m, m) if pivot else l3  # placeholder pointer: never written without pivoting
    if a.shape[0] and k:
        _lu_kernel[(a.shape[0],)](
            a,
            p3,
            l3,
            u3,
            m,
            n,
            k,
            *a.stride(),
            *p3.stride(),
            *l3.stride(),
            *u3.stride(),
            BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N,
            PIVOT=pivot,
            num_warps=4 if BLOCK_M * BLOCK_N <= 2048 else 8,
        )
    return P, L, U
