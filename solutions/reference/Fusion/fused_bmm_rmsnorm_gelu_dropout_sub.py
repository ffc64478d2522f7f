"""bmm -> RMSNorm -> GELU -> dropout -> subtract `other`, in two Triton kernels.

Kernel 1 is a tiled batched matmul (full fp32 "ieee" dots, no TF32) that writes Z into the
output buffer. The RMS statistic spans whole rows (or whole matrices), which a matmul tile does
not see, so kernel 2 takes a few normalisation groups (each the trailing `normalized_shape`
elements, contiguous in memory) per program: pass 1 accumulates sum(Z^2), pass 2 rescales by
1/sqrt(mean + eps), applies GELU and the dropout mask, subtracts `other` (read through its
broadcast strides, never expanded) and overwrites Z in place. The mask is
tl.rand(seed, flat index) >= p (Philox: a pure function of seed and index), with the seed drawn
from torch's default generator, so torch.manual_seed fixes it.
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
    key=["N", "P", "M"],
)
@triton.jit
def _bmm_kernel(
    a_ptr,
    b_ptr,
    z_ptr,
    N,
    M,
    P,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    num_pid_m = tl.cdiv(N, BLOCK_M)
    num_pid_n = tl.cdiv(P, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n  # grouped ordering for L2 reuse
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + batch * N * M + offs_m[:, None] * M + offs_k[None, :]
    b_ptrs = b_ptr + batch * M * P + offs_k[:, None] * P + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, M, BLOCK_K):
        k_ok = offs_k < M - k0
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < N) & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & (offs_n[None, :] < P), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")  # full fp32 products, no TF32
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * P
    z_ptrs = z_ptr + batch * N * P + offs_m[:, None] * P + offs_n[None, :]
    tl.store(z_ptrs, acc, mask=(offs_m[:, None] < N) & (offs_n[None, :] < P))


@triton.jit
def _rms_gelu_dropout_sub_kernel(
    y_ptr,
    o_ptr,
    G,
    L,
    N,
    P,
    os0,
    os1,
    os2,
    eps,
    p,
    seed,
    TRAINING: tl.constexpr,
    APPROX_TANH: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # ROWS normalisation groups (each L contiguous elements) per program
    grp = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    base = grp * L
    g_ok = grp < G
    offs0 = tl.arange(0, BLOCK)
    acc = tl.zeros((ROWS, BLOCK), dtype=tl.float32)
    for s in range(0, L, BLOCK):
        offs = s + offs0
        mask = g_ok[:, None] & (offs < L)[None, :]
        z = tl.load(y_ptr + base[:, None] + offs[None, :], mask=mask, other=0.0)
        acc += z * z
    rinv = 1.0 / tl.sqrt(tl.sum(acc, axis=1) / L + eps)
    for s in range(0, L, BLOCK):
        offs = s + offs0
        mask = g_ok[:, None] & (offs < L)[None, :]
        flat = base[:, None] + offs[None, :]  # element's index in the output
        x = tl.load(y_ptr + flat, mask=mask, other=0.0) * rinv[:, None]
        if APPROX_TANH:
            inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)  # sqrt(2/pi) (x + c x^3)
            g = 0.5 * x * (2.0 - 2.0 / (tl.exp(2.0 * inner) + 1.0))  # 0.5 x (1 + tanh(inner))
        else:
            g = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))  # x * Phi(x)
        if TRAINING:
            keep = tl.rand(seed, flat) >= p  # uniform in [0, 1): dropped with probability p
            g = tl.where(keep, g * (1.0 / (1.0 - p)), 0.0)
        o = tl.load(
            o_ptr + flat // (N * P) * os0 + (flat // P) % N * os1 + flat % P * os2,
            mask=mask,
            other=0.0,
        )  # other through its broadcast strides
        tl.store(y_ptr + flat, g - o, mask=mask)


def fused_bmm_rmsnorm_gelu_dropout_sub(
    input1,
    input2,
    other,
    normalized_shape,
    dropout_p=0.5,
    training=True,
    approximate="none",
    eps=1e-05,
    *,
    out=None,
):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    a, b = input1.contiguous(), input2.contiguous()
    B, N, M = a.shape
    P = b.shape[2]
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    if [N, P][2 - len(shape) :] != shape:
        raise ValueError(f"normalized_shape {shape} does not end the output shape {(B, N, P)}")
    L = P if len(shape) == 1 else N * P
    y = torch.empty((B, N, P), device=a.device, dtype=torch.float32)
    # The dropout seed comes from torch's default generator: torch.manual_seed fixes the mask.
    seed = int(torch.randint(0, 2**31 - 1, (1,))) if training else 0
    if y.numel() == 0:
        return y

    def grid(meta):
        return (triton.cdiv(N, meta["BLOCK_M"]) * triton.cdiv(P, meta["BLOCK_N"]), B)

    _bmm_kernel[grid](a, b, y, N, M, P)
    BLOCK = min(triton.next_power_of_2(L), 2048)
    ROWS = max(1, min(16, 2048 // BLOCK))
    G = y.numel() // L
    _rms_gelu_dropout_sub_kernel[(triton.cdiv(G, ROWS),)](
        y,
        other,
        G,
        L,
        N,
        P,
        *other.expand(B, N, P).stride(),
        float(eps),
        float(dropout_p),
        seed,
        TRAINING=bool(training) and dropout_p > 0,
        APPROX_TANH=approximate == "tanh",
        ROWS=ROWS,
        BLOCK=BLOCK,
        num_warps=4 if ROWS * BLOCK <= 512 else 8,
    )
    if out is not None:
        out.copy_(y)
        return out
    return y
