"""fp16 matmul in Triton: tiled tl.dot on float16 tiles with a float32 accumulator.

Each program computes one BLOCK_M x BLOCK_N tile of C for one batch entry, walking K in BLOCK_K
steps; programs are grouped GROUP_M tile rows at a time so neighbours share A and B tiles in L2.
fp16 x fp16 products are exact in fp32 and the tensor cores accumulate in fp32, so the only
rounding to fp16 is the final store. A 3-D x 2-D product is folded into one 2-D product over
(B*M, K). In Triton's CPU interpreter (only) the tiles are widened to fp32 before the dot, as
for the bf16 task, which gives the same exact products.
"""

import os

import torch
import triton
import triton.language as tl

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


@triton.autotune(
    configs=[  # the first config is also the one used by the CPU interpreter
        triton.Config(
            {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_stages=4, num_warps=4
        ),
        triton.Config(
            {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=3, num_warps=8
        ),
        triton.Config(
            {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=4, num_warps=8
        ),
        triton.Config(
            {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=4, num_warps=4
        ),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def _matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_ab,
    stride_am,
    stride_ak,
    stride_bb,
    stride_bk,
    stride_bn,
    stride_cb,
    stride_cm,
    stride_cn,
    UPCAST: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
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
    a_ptrs = (
        a_ptr
        + batch * stride_ab
        + offs_m[:, None].to(tl.int64) * stride_am
        + offs_k[None, :] * stride_ak
    )
    b_ptrs = (
        b_ptr
        + batch * stride_bb
        + offs_k[:, None].to(tl.int64) * stride_bk
        + offs_n[None, :] * stride_bn
    )
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k0  # the last K step may run past the end
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & (offs_n[None, :] < N), other=0.0)
        if UPCAST:  # interpreter only: exact fp32 products of the 16-bit values
            acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)  # 16-bit tensor-core dot, fp32 accumulator
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_ptrs = (
        c_ptr
        + batch * stride_cb
        + offs_m[:, None].to(tl.int64) * stride_cm
        + offs_n[None, :] * stride_cn
    )
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)  # one rounding, at the end


def _launch(a, b, c, nb, b_batched):
    M, K = a.shape[-2:]
    N = b.shape[-1]
    a3, c3 = a.reshape(nb, M, K), c.view(nb, M, N)
    b3 = b.reshape(nb if b_batched else 1, K, N)
    stride_bb = b3.stride(0) if b_batched else 0  # a shared 2-D operand: same B for every batch

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]), nb)

    _matmul_kernel[grid](
        a3,
        b3,
        c3,
        M,
        N,
        K,
        a3.stride(0),
        a3.stride(1),
        a3.stride(2),
        stride_bb,
        b3.stride(1),
        b3.stride(2),
        c3.stride(0),
        c3.stride(1),
        c3.stride(2),
        UPCAST=INTERPRETED,
    )


def matmul_fp16(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    a, b = input.contiguous(), other.contiguous()
    if a.dim() not in (2, 3) or b.dim() not in (2, 3) or (a.dim() == 2 and b.dim() == 3):
        raise ValueError(f"unsupported matmul form {tuple(a.shape)} @ {tuple(b.shape)}")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"inner dimensions differ: {tuple(a.shape)} @ {tuple(b.shape)}")
    if b.dim() == 2:
        # (M, K) or (B, M, K) times a shared (K, N): one 2-D product over all rows of A.
        rows = a.numel() // a.shape[-1]
        c = torch.empty((*a.shape[:-1], b.shape[1]), device=a.device, dtype=a.dtype)
        _launch(a.reshape(rows, a.shape[-1]), b, c.view(rows, b.shape[1]), 1, False)
        return c
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"batch sizes differ: {tuple(a.shape)} @ {tuple(b.shape)}")
    c = torch.empty((a.shape[0], a.shape[1], b.shape[2]), device=a.device, dtype=a.dtype)
    _launch(a, b, c, a.shape[0], True)
    return c
