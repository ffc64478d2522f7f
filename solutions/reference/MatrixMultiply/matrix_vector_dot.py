"""dot(alpha * A @ x + beta * y, x) in Triton: a fused GEMV + dot with a deterministic reduction.

Each program owns BLOCK_M rows of A and streams them once in BLOCK_M x BLOCK_N tiles, keeping
lane-wise fp32 partial sums of A @ x; it then forms v = alpha * (A @ x) + beta * y for its rows
and writes the partial dot sum_i v_i x_i. A single-program kernel adds the partials in a fixed
order (no atomics), so repeated calls give the same bits. No tensor-core dot, so no TF32.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _gemv_dot_kernel(
    a_ptr,
    x_ptr,
    y_ptr,
    part_ptr,
    N,
    alpha,
    beta,
    stride_am,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    r_ok = rows < N
    offs_n = tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + offs_n
        c_ok = cols < N
        a = tl.load(
            a_ptr + rows[:, None].to(tl.int64) * stride_am + cols[None, :],
            mask=r_ok[:, None] & c_ok[None, :],
            other=0.0,
        )
        xc = tl.load(x_ptr + cols, mask=c_ok, other=0.0)
        acc += a * xc[None, :]
    ax = tl.sum(acc, axis=1)  # (A @ x) for this program's rows
    xr = tl.load(x_ptr + rows, mask=r_ok, other=0.0)
    v = alpha * ax + beta * tl.load(y_ptr + rows, mask=r_ok, other=0.0)
    tl.store(part_ptr + pid, tl.sum(tl.where(r_ok, v * xr, 0.0), axis=0))


@triton.jit
def _sum_kernel(part_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i0 in range(0, n, BLOCK):
        acc += tl.load(part_ptr + i0 + offs, mask=i0 + offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


def matrix_vector_dot(A, x, y, alpha, beta):
    A, x, y = A.contiguous(), x.contiguous(), y.contiguous()
    n = A.shape[0]
    if tuple(A.shape) != (n, n) or x.shape != (n,) or y.shape != (n,):
        raise ValueError(
            f"need A (n, n), x (n,), y (n,); got {tuple(A.shape)}, "
            f"{tuple(x.shape)}, {tuple(y.shape)}"
        )
    block_m = 32
    grid = triton.cdiv(n, block_m)
    parts = torch.empty((grid,), device=A.device, dtype=torch.float32)
    out = torch.empty((), device=A.device, dtype=torch.float32)
    _gemv_dot_kernel[(grid,)](
        A, x, y, parts, n, float(alpha), float(beta), A.stride(0), BLOCK_M=block_m, BLOCK_N=128
    )
    _sum_kernel[(1,)](parts, out, grid, BLOCK=1024)
    return out
