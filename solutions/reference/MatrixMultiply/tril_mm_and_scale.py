"""beta * (alpha * (tril(A) @ B)) in Triton: a tiled fp32 GEMM that skips the upper triangle.

Each program owns a BLOCK_M x BLOCK_N tile of the output, rows m0 .. m0+BLOCK_M-1. Row i needs
A[i, k] only for k <= i, so the K loop stops at the tile's last row: tiles low in the matrix do
more work, the top ones little, and the total is about half a full GEMM. Inside the diagonal
block the upper entries are replaced by 0 with tl.where before the dot (never multiplied by a
0/1 mask: NaN * 0 is NaN). The dot is fp32 "ieee" (no TF32); the epilogue scales by alpha, then
beta, as the definition does.
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
    key=["M", "N"],
)
@triton.jit
def _tril_mm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    alpha,
    beta,
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
    a_ptrs = a_ptr + offs_m[:, None].to(tl.int64) * M + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None].to(tl.int64) * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    k_stop = tl.minimum((pid_m + 1) * BLOCK_M, M)  # no row of this tile reaches past it
    for k0 in range(0, k_stop, BLOCK_K):
        ks = k0 + offs_k
        keep = (offs_m[:, None] < M) & (ks[None, :] <= offs_m[:, None])  # lower triangle only
        a = tl.load(a_ptrs, mask=keep, other=0.0)
        a = tl.where(keep, a, 0.0)
        b = tl.load(b_ptrs, mask=(ks[:, None] < M) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")  # full fp32 products, no TF32
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N

    c_ptrs = c_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :]
    tl.store(c_ptrs, beta * (alpha * acc), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def tril_mm_and_scale(A: torch.Tensor, B: torch.Tensor, alpha: float, beta: float):
    A, B = A.contiguous(), B.contiguous()
    n, p = B.shape
    if tuple(A.shape) != (n, n):
        raise ValueError(f"need A (n, n) and B (n, p); got {tuple(A.shape)}, {tuple(B.shape)}")
    c = torch.empty((n, p), device=B.device, dtype=torch.float32)

    def grid(meta):
        return (triton.cdiv(n, meta["BLOCK_M"]) * triton.cdiv(p, meta["BLOCK_N"]),)

    _tril_mm_kernel[grid](A, B, c, n, p, float(alpha), float(beta))
    return c
