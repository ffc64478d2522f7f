"""Upper triangular solve plus a scaled addend in Triton: back substitution, one program per
(system, block of right-hand-side columns).

The program loads the upper triangle of A (masked: the strict lower triangle is never read) as a
BLOCK_N x BLOCK_N register tile and BLOCK_K columns of b. Back substitution walks the rows from
the bottom: row j of x is row j of the updated b over A_jj, then column j of A times that row is
subtracted from the rows above. The epilogue adds alpha * y (y read through broadcast strides,
so a (k,) vector costs no copy). float32 throughout; register-resident: n <= 128.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _triu_solve_axpy_kernel(
    a_ptr,
    b_ptr,
    y_ptr,
    x_ptr,
    n,
    k,
    alpha,
    sab,
    sar,
    sac,
    sbb,
    sbr,
    sbc,
    syb,
    syr,
    syc,
    sxb,
    sxr,
    sxc,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    rhs = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    rows = tl.arange(0, BLOCK_N)
    cols = tl.arange(0, BLOCK_N)
    upper = (cols[None, :] < n) & (rows[:, None] <= cols[None, :])
    a = tl.load(a_ptr + b * sab + rows[:, None] * sar + cols[None, :] * sac, mask=upper, other=0.0)
    a = a.to(tl.float32)
    bmask = (rows[:, None] < n) & (rhs[None, :] < k)
    x = tl.load(b_ptr + b * sbb + rows[:, None] * sbr + rhs[None, :] * sbc, mask=bmask, other=0.0)
    x = x.to(tl.float32)
    for i in range(0, n):
        j = n - 1 - i
        a_col = tl.sum(tl.where(cols[None, :] == j, a, 0.0), axis=1)  # column j of A
        ajj = tl.sum(tl.where(rows == j, a_col, 0.0), axis=0)
        x_j = tl.sum(tl.where(rows[:, None] == j, x, 0.0), axis=0) / ajj
        x = tl.where(
            rows[:, None] == j,
            x_j[None, :],
            x - tl.where(rows < j, a_col, 0.0)[:, None] * x_j[None, :],
        )
    y = tl.load(y_ptr + b * syb + rows[:, None] * syr + rhs[None, :] * syc, mask=bmask, other=0.0)
    x = x + alpha * y.to(tl.float32)
    tl.store(x_ptr + b * sxb + rows[:, None] * sxr + rhs[None, :] * sxc, x, mask=bmask)


def solve_and_add_scaled_vector(
    A: torch.Tensor, b: torch.Tensor, y: torch.Tensor, alpha: float
) -> torch.Tensor:
    n, k = b.shape[-2], b.shape[-1]
    if A.shape[-2:] != (n, n) or A.shape[:-2] != b.shape[:-2]:
        raise NotImplementedError("A (..., n, n) and b (..., n, k) with equal batch shapes")
    BLOCK_N = max(triton.next_power_of_2(n), 16)
    if BLOCK_N > 128:
        raise NotImplementedError("register-resident kernel: n <= 128")
    BLOCK_K = min(max(triton.next_power_of_2(k), 16), 64)
    a3, b3 = A.reshape(-1, n, n), b.reshape(-1, n, k)
    y3 = y.expand(b.shape).reshape(-1, n, k)  # a view: broadcast dimensions get stride 0
    x = torch.empty_like(b)
    x3 = x.view(-1, n, k)
    grid = (b3.shape[0], triton.cdiv(k, BLOCK_K))
    if b3.shape[0] and k:
        _triu_solve_axpy_kernel[grid](
            a3,
            b3,
            y3,
            x3,
            n,
            k,
            float(alpha),
            *a3.stride(),
            *b3.stride(),
            *y3.stride(),
            *x3.stride(),
            BLOCK_N=BLOCK_N,
            BLOCK_K=BLOCK_K,
            num_warps=4 if BLOCK_N * BLOCK_K <= 2048 else 8,
        )
    return x
