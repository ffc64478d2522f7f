"""sum |alpha * A @ A^T + beta * C| in Triton: a GEMM whose epilogue reduces its tile to a scalar.

Each program computes one BLOCK_M x BLOCK_N tile of A @ A^T with the tutorial's tiled fp32
tl.dot (input_precision="ieee": TF32 would bias the result when beta * C nearly cancels the
product), adds beta * C, and writes the sum of |D| over its tile; D itself is never stored.
A single-program kernel adds the per-tile partials in a fixed order (deterministic, no atomics).
A^T is read through transposed strides of A, so no copy is made.
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
    key=["N", "K"],
    reset_to_zero=["part_ptr"],  # a config with fewer tiles must not see another's partials
)
@triton.jit
def _syrk_abs_kernel(
    a_ptr,
    c_ptr,
    part_ptr,
    N,
    K,
    alpha,
    beta,
    stride_an,
    stride_ak,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(N, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n  # grouped ordering for L2 reuse
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = a_ptr + offs_m[:, None].to(tl.int64) * stride_an + offs_k[None, :] * stride_ak
    y_ptrs = a_ptr + offs_k[:, None] * stride_ak + offs_n[None, :].to(tl.int64) * stride_an
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k0
        x = tl.load(x_ptrs, mask=(offs_m[:, None] < N) & k_ok[None, :], other=0.0)
        y = tl.load(y_ptrs, mask=k_ok[:, None] & (offs_n[None, :] < N), other=0.0)  # A^T tile
        acc = tl.dot(x, y, acc, input_precision="ieee")  # full fp32 products, no TF32
        x_ptrs += BLOCK_K * stride_ak
        y_ptrs += BLOCK_K * stride_ak

    mask = (offs_m[:, None] < N) & (offs_n[None, :] < N)
    c = tl.load(
        c_ptr + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :] * stride_cn,
        mask=mask,
        other=0.0,
    )
    d = tl.abs(alpha * acc + beta * c)
    tl.store(part_ptr + pid, tl.sum(tl.sum(tl.where(mask, d, 0.0), axis=1), axis=0))


@triton.jit
def _sum_kernel(part_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i0 in range(0, n, BLOCK):
        acc += tl.load(part_ptr + i0 + offs, mask=i0 + offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


def symmetric_mm_and_abs_sum(A, C, alpha, beta):
    n, m = A.shape
    if tuple(C.shape) != (n, n):
        raise ValueError(f"C must be ({n}, {n}), got {tuple(C.shape)}")
    # one partial per tile; the smallest tile (first config) bounds the count
    parts = torch.zeros((triton.cdiv(n, 64) ** 2,), device=A.device, dtype=torch.float32)
    out = torch.empty((), device=A.device, dtype=torch.float32)

    def grid(meta):
        return (triton.cdiv(n, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)

    _syrk_abs_kernel[grid](
        A,
        C,
        parts,
        n,
        m,
        float(alpha),
        float(beta),
        A.stride(0),
        A.stride(1),
        C.stride(0),
        C.stride(1),
    )
    _sum_kernel[(1,)](parts, out, parts.numel(), BLOCK=1024)
    return out
