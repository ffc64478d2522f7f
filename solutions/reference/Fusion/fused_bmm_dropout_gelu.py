"""bmm + dropout + GELU in one Triton kernel: the dropout and GELU run in the matmul's epilogue.

Each program computes one BLOCK_M x BLOCK_N tile of Z = A @ B for one batch entry (full fp32
"ieee" dot, no TF32), then, still in registers, draws one uniform number per output element with
tl.rand(seed, flat index) (Philox: a pure function of seed and index, so any tiling gives the same
mask), zeroes the elements whose number is below p, scales the rest by 1/(1-p) and applies GELU.
The seed is drawn from torch's default generator, so torch.manual_seed fixes the mask.
tanh is written through exp as in the GELU example: tanh(y) = 1 - 2 / (exp(2y) + 1).
"""

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[  # the first config is also the one used by the CPU interpreter
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_stages=4,
                      num_warps=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_stages=3,
                      num_warps=8),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_stages=4,
                      num_warps=4),
    ],
    key=["N", "P", "M"],
)
@triton.jit
def _bmm_dropout_gelu_kernel(
    a_ptr, b_ptr, o_ptr, N, M, P, p, seed,
    TRAINING: tl.constexpr, APPROX_TANH: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    num_pid_m = tl.cdiv(N, BLOCK_M)
    num_pid_n = tl.cdiv(P, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n  # grouped ordering for L2 reuse
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # rows of Z (N)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # columns of Z (P)
    offs_k = tl.arange(0, BLOCK_K)
    bb = batch.to(tl.int64)
    a_ptrs = a_ptr + bb * N * M + offs_m[:, None] * M + offs_k[None, :]
    b_ptrs = b_ptr + bb * M * P + offs_k[:, None] * P + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, M, BLOCK_K):
        k_ok = offs_k < M - k0
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < N) & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & (offs_n[None, :] < P), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")  # full fp32 products, no TF32
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * P

    flat = batch * N * P + offs_m[:, None] * P + offs_n[None, :]  # element's index in O
    x = acc
    if TRAINING:
        keep = tl.rand(seed, flat) >= p  # uniform in [0, 1): dropped with probability p
        x = tl.where(keep, acc * (1.0 / (1.0 - p)), 0.0)
    if APPROX_TANH:
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)  # sqrt(2/pi) * (x + c x^3)
        y = 0.5 * x * (2.0 - 2.0 / (tl.exp(2.0 * inner) + 1.0))  # 0.5 x (1 + tanh(inner))
    else:
        y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))  # x * Phi(x)
    o_ptrs = o_ptr + bb * N * P + offs_m[:, None] * P + offs_n[None, :]
    tl.store(o_ptrs, y, mask=(offs_m[:, None] < N) & (offs_n[None, :] < P))


def fused_bmm_dropout_gelu(input1, input2, p=0.5, training=True, inplace=False,
                           approximate="none", *, out=None):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    a, b = input1.contiguous(), input2.contiguous()
    B, N, M = a.shape
    P = b.shape[2]
    if b.shape[0] != B or b.shape[1] != M:
        raise ValueError(f"bmm shapes do not fit: {tuple(a.shape)} @ {tuple(b.shape)}")
    o = out if out is not None and out.is_contiguous() else torch.empty(
        (B, N, P), device=a.device, dtype=torch.float32)
    # The dropout seed comes from torch's default generator: torch.manual_seed fixes the mask.
    seed = int(torch.randint(0, 2**31 - 1, (1,))) if training else 0

    def grid(meta):
        return (triton.cdiv(N, meta["BLOCK_M"]) * triton.cdiv(P, meta["BLOCK_N"]), B)

    _bmm_dropout_gelu_kernel[grid](
        a, b, o, N, M, P, float(p), seed,
        TRAINING=bool(training), APPROX_TANH=approximate == "tanh",
    )
    if out is not None and o is not out:
        out.copy_(o)
        return out
    return o
