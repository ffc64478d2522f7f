"""LDL^T factorization in Triton (LAPACK compact format), one program per matrix.

Each program loads the lower triangle of its symmetric n x n matrix (mirrored into the upper
one) as a BLOCK x BLOCK register tile. Step k takes d_k = a_kk and the multipliers
l = a[k+1:, k] / d_k, writes them into column k of LD (d_k on the diagonal), and subtracts
l d_k l^T from the trailing matrix (float32). This is Bunch-Kaufman's choice whenever
|a_kk| >= 0.64 * max_i |a_ik|, which holds at every step for the task's diagonally dominant
inputs, so pivots = 1..n (1x1 blocks, no interchanges); a matrix that would need a pivot is
refused with NaN rather than factored wrongly. Register-resident: n <= 128.
"""

import torch
import triton
import triton.language as tl

BK_ALPHA = 0.6403882032022076  # (1 + sqrt(17)) / 8, Bunch-Kaufman's threshold


@triton.jit
def _ldl_kernel(
    a_ptr, ld_ptr, piv_ptr, n, sab, sar, sac, slb, slr, slc, spb, alpha, BLOCK: tl.constexpr
):
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK)
    inside = (rows[:, None] < n) & (cols[None, :] < n)
    hi = tl.maximum(rows[:, None], cols[None, :])
    lo = tl.minimum(rows[:, None], cols[None, :])
    a = tl.load(a_ptr + b * sab + hi * sar + lo * sac, mask=inside, other=0.0).to(tl.float32)
    ld = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, n):
        col = tl.sum(tl.where(cols[None, :] == k, a, 0.0), axis=1)
        dk = tl.sum(tl.where(rows == k, col, 0.0), axis=0)
        colmax = tl.max(tl.where(rows > k, tl.abs(col), 0.0), axis=0)
        # a 1x1 pivot without interchange is Bunch-Kaufman's choice only if this holds
        dk = tl.where(tl.abs(dk) >= alpha * colmax, dk, float("nan"))
        lk = tl.where(rows > k, col / dk, 0.0)
        ld = tl.where(cols[None, :] == k, tl.where(rows == k, dk, lk)[:, None], ld)
        a = a - lk[:, None] * (dk * lk)[None, :]
    tl.store(ld_ptr + b * slb + rows[:, None] * slr + cols[None, :] * slc, ld, mask=inside)
    tl.store(piv_ptr + b * spb + rows, (rows + 1).to(tl.int32), mask=rows < n)


def ldl_factor(A, hermitian=False, out=None):
    n = A.shape[-1]
    if A.shape[-2] != n:
        raise ValueError("A must be square")
    BLOCK = max(triton.next_power_of_2(n), 16)
    if BLOCK > 128:
        raise NotImplementedError("register-resident kernel: n <= 128")
    a = A.reshape(-1, n, n)
    if out is not None:
        LD, pivots = out
    else:
        LD = torch.empty_like(A)
        pivots = torch.empty(A.shape[:-1], dtype=torch.int32, device=A.device)
    ld, piv = LD.view(-1, n, n), pivots.view(-1, n)
    if a.shape[0]:
        _ldl_kernel[(a.shape[0],)](
            a,
            ld,
            piv,
            n,
            *a.stride(),
            *ld.stride(),
            piv.stride(0),
            BK_ALPHA,
            BLOCK=BLOCK,
            num_warps=4 if BLOCK <= 32 else 8,
        )
    return LD, pivots
