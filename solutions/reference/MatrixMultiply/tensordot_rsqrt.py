"""rsqrt(tensordot(a, b, dims)) in Triton: permute to one GEMM, rsqrt fused into the epilogue.

Any tensordot is a matrix product once the free dims of a come first and its contracted dims
last (and the contracted dims of b first, in matching order): the wrapper permutes and copies
the operands into (M, K) and (K, N) matrices (dims=0 gives K = 1, an outer product). The kernel
is the tutorial's tiled fp32 tl.dot (input_precision="ieee", no TF32) and applies rsqrt to the
accumulator before the store, so the contraction result never goes to memory.
"""

import math

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
    key=["M", "N", "K"],
)
@triton.jit
def _matmul_rsqrt_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
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
    a_ptrs = a_ptr + offs_m[:, None].to(tl.int64) * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None].to(tl.int64) * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k0
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")  # full fp32 products, no TF32
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N

    c_ptrs = c_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :]
    tl.store(c_ptrs, tl.math.rsqrt(acc), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _contracted_dims(a, b, dims):
    if isinstance(dims, int):
        return list(range(a.dim() - dims, a.dim())), list(range(dims))
    da, db = ([d % t.dim() for d in ds] for t, ds in zip((a, b), dims, strict=True))
    if len(da) != len(db):
        raise ValueError(f"dims lists differ in length: {dims}")
    return da, db


def tensordot_rsqrt(a: torch.Tensor, b: torch.Tensor, dims) -> torch.Tensor:
    da, db = _contracted_dims(a, b, dims)
    if [a.shape[i] for i in da] != [b.shape[i] for i in db]:
        raise ValueError(f"contracted sizes differ: {tuple(a.shape)}, {tuple(b.shape)}, {dims}")
    free_a = [i for i in range(a.dim()) if i not in da]
    free_b = [i for i in range(b.dim()) if i not in db]
    out_shape = [a.shape[i] for i in free_a] + [b.shape[i] for i in free_b]
    M = math.prod(a.shape[i] for i in free_a)
    N = math.prod(b.shape[i] for i in free_b)
    K = math.prod(a.shape[i] for i in da)
    a2 = a.permute(free_a + da).contiguous().view(M, K)  # (free..., contracted...) as (M, K)
    b2 = b.permute(db + free_b).contiguous().view(K, N)  # (contracted..., free...) as (K, N)
    c = torch.empty((M, N), device=a.device, dtype=torch.float32)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    _matmul_rsqrt_kernel[grid](a2, b2, c, M, N, K)
    return c.view(out_shape)
