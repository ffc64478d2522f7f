"""Linear + sigmoid + dropout in one Triton matmul: sigmoid and dropout run in the epilogue.

The input is viewed as an (M, K) matrix and multiplied by weight^T, read from the (N, K)
row-major weight through swapped strides. Each program computes one BLOCK_M x BLOCK_N tile with
full-fp32 "ieee" dots (no TF32), adds the bias, applies the sigmoid, and draws one uniform number
per output element with tl.rand(seed, flat index): Philox, a pure function of seed and index, so
any tiling gives the same mask. Elements whose number is below p are zeroed, the rest scaled by
1/(1-p). The seed comes from torch's default generator, so torch.manual_seed fixes the mask.
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
    key=["M", "N", "K"],
)
@triton.jit
def _linear_sigmoid_dropout_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    M,
    N,
    K,
    p,
    seed,
    HAS_BIAS: tl.constexpr,
    TRAINING: tl.constexpr,
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
    x_ptrs = x_ptr + offs_m.to(tl.int64)[:, None] * K + offs_k[None, :]
    w_ptrs = w_ptr + offs_n.to(tl.int64)[None, :] * K + offs_k[:, None]  # (W^T)[k, n] = W[n, k]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k0
        a = tl.load(x_ptrs, mask=(offs_m[:, None] < M) & k_ok[None, :], other=0.0)
        b = tl.load(w_ptrs, mask=k_ok[:, None] & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")  # full fp32 products, no TF32
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    if HAS_BIAS:
        acc += tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0)[None, :]
    y = 1.0 / (1.0 + tl.exp(-acc))  # sigmoid; exp overflow gives 1/inf = 0, as it should
    flat = offs_m.to(tl.int64)[:, None] * N + offs_n[None, :]  # element's index in the output
    if TRAINING:
        keep = tl.rand(seed, flat) >= p  # uniform in [0, 1): dropped with probability p
        y = tl.where(keep, y * (1.0 / (1.0 - p)), 0.0)
    tl.store(y_ptr + flat, y, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def fused_dropout_sigmoid_linear(input, weight, bias=None, p=0.5, training=True, inplace=False):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    K = input.shape[-1]
    x = input.reshape(-1, K)
    if not x.is_contiguous():
        x = x.contiguous()
    w = weight.contiguous()
    M, N = x.shape[0], w.shape[0]
    y = torch.empty((M, N), device=x.device, dtype=torch.float32)
    # The dropout seed comes from torch's default generator: torch.manual_seed fixes the mask.
    seed = int(torch.randint(0, 2**31 - 1, (1,))) if training else 0
    if M and N:
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
        _linear_sigmoid_dropout_kernel[grid](
            x,
            w,
            bias if bias is not None else w,
            y,
            M,
            N,
            K,
            float(p),
            seed,
            HAS_BIAS=bias is not None,
            TRAINING=bool(training) and p > 0,
        )
    return y.view(*input.shape[:-1], N)
