"""addmm in Triton: a tiled fp32 tl.dot matmul with the beta * input term fused into the epilogue.

Each program owns one BLOCK_M x BLOCK_N tile of the output and walks K in BLOCK_K steps, with
grouped program ordering for L2 reuse (as in the Triton matmul tutorial). The dot runs in full
fp32 ("ieee"), not TF32. `input` is broadcast to (M, N) as a stride-0 view, so one kernel serves
every broadcast shape; with beta == 0 the kernel never reads it (NaN/Inf there must not leak).
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
    key=["M", "N", "K", "HAS_INPUT"],
)
@triton.jit
def _addmm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    out_ptr,
    M,
    N,
    K,
    alpha,
    beta,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    stride_om,
    stride_on,
    HAS_INPUT: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n  # grouped ordering: GROUP_M tile rows per sweep
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None].to(tl.int64) * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None].to(tl.int64) * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k0  # the last K step may run past the end
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")  # full fp32 products, no TF32
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    res = alpha * acc
    if HAS_INPUT:  # beta == 0 skips the load: the term is dropped, not multiplied by zero
        c_ptrs = c_ptr + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :] * stride_cn
        res = beta * tl.load(c_ptrs, mask=mask, other=0.0) + res
    o_ptrs = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :] * stride_on
    tl.store(o_ptrs, res, mask=mask)


def addmm(input, mat1, mat2, beta=1, alpha=1, out=None):
    M, K = mat1.shape
    K2, N = mat2.shape
    if K != K2:
        raise ValueError(f"inner dimensions differ: {tuple(mat1.shape)} @ {tuple(mat2.shape)}")
    c = input.expand(M, N)  # stride-0 view for broadcast dimensions, no copy
    res = out if out is not None else torch.empty((M, N), device=mat1.device, dtype=mat1.dtype)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    _addmm_kernel[grid](
        mat1,
        mat2,
        c,
        res,
        M,
        N,
        K,
        float(alpha),
        float(beta),
        mat1.stride(0),
        mat1.stride(1),
        mat2.stride(0),
        mat2.stride(1),
        c.stride(0),
        c.stride(1),
        res.stride(0),
        res.stride(1),
        HAS_INPUT=beta != 0,
    )
    return res
