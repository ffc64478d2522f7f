"""C1 = alpha * A @ B + beta * C, then alpha * C1 @ C1^T + beta * C1, in Triton.

Both steps are one GEMM kernel with an axpby epilogue, out = alpha * (X @ Y) + beta * Z: the
tutorial's tiled fp32 tl.dot (input_precision="ieee", no TF32) with grouped program ordering.
The second launch reads C1 twice, once as X and once, through transposed strides, as Y = C1^T,
so no transposed copy is made. beta == 0 skips the load of Z.
"""

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[  # the first config is also the one used by the CPU interpreter
        triton.Config(
            {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_stages=4, num_warps=4
        ),
        triton.Config(
            {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_stages=3, num_warps=8
        ),
        triton.Config(
            {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_stages=4, num_warps=4
        ),
    ],
    key=["M", "N", "K", "HAS_Z"],
)
@triton.jit
def _gemm_axpby_kernel(
    x_ptr,
    y_ptr,
    z_ptr,
    out_ptr,
    M,
    N,
    K,
    alpha,
    beta,
    stride_xm,
    stride_xk,
    stride_yk,
    stride_yn,
    stride_zm,
    stride_zn,
    stride_om,
    stride_on,
    HAS_Z: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n  # grouped ordering for L2 reuse
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + offs_m[:, None].to(tl.int64) * stride_xm + offs_k[None, :] * stride_xk
    y_ptrs = y_ptr + offs_k[:, None] * stride_yk + offs_n[None, :].to(tl.int64) * stride_yn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k0  # the last K step may run past the end
        x = tl.load(x_ptrs, mask=(offs_m[:, None] < M) & k_ok[None, :], other=0.0)
        y = tl.load(y_ptrs, mask=k_ok[:, None] & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc, input_precision="ieee")  # full fp32 products, no TF32
        x_ptrs += BLOCK_K * stride_xk
        y_ptrs += BLOCK_K * stride_yk

    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    res = alpha * acc
    if HAS_Z:
        z_ptrs = z_ptr + offs_m[:, None].to(tl.int64) * stride_zm + offs_n[None, :] * stride_zn
        res += beta * tl.load(z_ptrs, mask=mask, other=0.0)
    o_ptrs = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :] * stride_on
    tl.store(o_ptrs, res, mask=mask)


def _gemm_axpby(x, y, z, alpha, beta):
    """alpha * (x @ y) + beta * z for 2-D views with any strides."""
    M, K = x.shape
    N = y.shape[1]
    out = torch.empty((M, N), device=x.device, dtype=torch.float32)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    _gemm_axpby_kernel[grid](
        x,
        y,
        z,
        out,
        M,
        N,
        K,
        float(alpha),
        float(beta),
        x.stride(0),
        x.stride(1),
        y.stride(0),
        y.stride(1),
        z.stride(0),
        z.stride(1),
        out.stride(0),
        out.stride(1),
        HAS_Z=beta != 0,
    )
    return out


def matrix_multiply_symmetric(A, B, C, alpha, beta):
    n, m = A.shape
    if tuple(B.shape) != (m, n) or tuple(C.shape) != (n, n):
        raise ValueError(
            f"need A (n, m), B (m, n), C (n, n); got {tuple(A.shape)}, "
            f"{tuple(B.shape)}, {tuple(C.shape)}"
        )
    c1 = _gemm_axpby(A, B, C, alpha, beta)
    return _gemm_axpby(c1, c1.T, c1, alpha, beta)  # c1.T is a strided view, not a copy
