"""mul + add + log_softmax + dropout + bmm in Triton: a normalising pass, then a batched matmul.

Kernel 1 sees S = input1 * input2 + other as (outer, L, inner) with the softmax dim in the
middle (a free view of the contiguous (B, N, D) layout, any dim) and owns BLOCK_J softmax
slices: one sweep computes S on the fly and keeps an online log-sum-exp (running maximum, sum
rescaled when it grows); a second sweep recomputes S, writes S - lse, and drops elements whose
uniform number tl.rand(seed, flat index) is below p, scaling survivors by 1/(1-p). `other` is
read through its broadcast strides. Kernel 2 multiplies that (B, N, D) tensor by mat2 tile by
tile in full fp32 ("ieee": no TF32). The seed is drawn from torch's default generator, so
torch.manual_seed fixes the mask.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _load_s(x1_ptr, x2_ptr, o_ptr, addr, ok, S1, S2, os0, os1, os2, o_val, O_TENSOR: tl.constexpr):
    s = tl.load(x1_ptr + addr, mask=ok, other=0.0) * tl.load(x2_ptr + addr, mask=ok, other=0.0)
    if O_TENSOR:
        i2 = addr % S2  # (b, n, d) of the flat address, for other's broadcast strides
        i1 = (addr // S2) % S1
        i0 = addr // (S2 * S1)
        s += tl.load(o_ptr + i0 * os0 + i1 * os1 + i2 * os2, mask=ok, other=0.0)
    else:
        s += o_val
    return s


@triton.jit
def _log_softmax_dropout_kernel(
    x1_ptr, x2_ptr, o_ptr, d_ptr, J, L, inner, S1, S2, os0, os1, os2, o_val, p, scale, seed,
    O_TENSOR: tl.constexpr, TRAINING: tl.constexpr, BLOCK_J: tl.constexpr, BLOCK_L: tl.constexpr,
):  # fmt: skip
    offs_j = tl.program_id(0).to(tl.int64) * BLOCK_J + tl.arange(0, BLOCK_J)
    base = (offs_j // inner) * L * inner + offs_j % inner  # element 0 of each slice
    m = tl.full((BLOCK_J,), float("-inf"), tl.float32)
    acc = tl.zeros((BLOCK_J,), tl.float32)
    for l0 in range(0, L, BLOCK_L):
        offs_l = l0 + tl.arange(0, BLOCK_L)
        ok = (offs_j[:, None] < J) & (offs_l[None, :] < L)
        addr = base[:, None] + offs_l.to(tl.int64)[None, :] * inner
        s = _load_s(x1_ptr, x2_ptr, o_ptr, addr, ok, S1, S2, os0, os1, os2, o_val, O_TENSOR)
        s = tl.where(ok, s, float("-inf"))
        new_m = tl.maximum(m, tl.max(s, axis=1))
        safe_m = tl.where(new_m == float("-inf"), 0.0, new_m)  # slices with nothing yet
        acc = acc * tl.exp(m - safe_m) + tl.sum(tl.exp(s - safe_m[:, None]), axis=1)
        m = new_m
    lse = m + tl.log(acc)
    for l0 in range(0, L, BLOCK_L):
        offs_l = l0 + tl.arange(0, BLOCK_L)
        ok = (offs_j[:, None] < J) & (offs_l[None, :] < L)
        addr = base[:, None] + offs_l.to(tl.int64)[None, :] * inner
        s = _load_s(x1_ptr, x2_ptr, o_ptr, addr, ok, S1, S2, os0, os1, os2, o_val, O_TENSOR)
        y = s - lse[:, None]
        if TRAINING:
            keep = tl.rand(seed, addr) >= p  # uniform in [0, 1): dropped with probability p
            y = tl.where(keep, y * scale, 0.0)
        tl.store(d_ptr + addr, y, mask=ok)


@triton.autotune(
    configs=[  # the first config is also the one used by the CPU interpreter
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_stages=4, num_warps=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}, num_stages=3, num_warps=8),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32}, num_stages=4, num_warps=4),
    ],
    key=["N", "K", "P"],
)
@triton.jit
def _bmm_kernel(
    a_ptr, b_ptr, y_ptr, N, K, P,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    pid_m, pid_n, batch = tl.program_id(0), tl.program_id(1), tl.program_id(2).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + batch * N * K + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + batch * K * P + offs_k[:, None] * P + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k0
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < N) & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & (offs_n[None, :] < P), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")  # full fp32 products, no TF32
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * P
    y_ptrs = y_ptr + batch * N * P + offs_m[:, None] * P + offs_n[None, :]
    tl.store(y_ptrs, acc, mask=(offs_m[:, None] < N) & (offs_n[None, :] < P))


def fused_mul_add_logsoftmax_dropout_bmm(
    input1, input2, other, mat2, p=0.5, training=True, inplace=False, dim=-1, *, out=None
):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    x1, x2, m2 = input1.contiguous(), input2.contiguous(), mat2.contiguous()
    if x1.shape != x2.shape or x1.dim() != 3:
        raise NotImplementedError("input1 and input2 of one (B, N, D) shape")
    B, N, D = x1.shape
    P = m2.shape[2]
    d = torch.empty((B, N, D), device=x1.device, dtype=torch.float32)
    y = torch.empty((B, N, P), device=x1.device, dtype=torch.float32)
    o_tensor = isinstance(other, torch.Tensor)
    if o_tensor:  # other's strides broadcast to (B, N, D)
        o_st, o_val = list(other.expand(B, N, D).stride()), 0.0
    else:
        o_st, o_val = [0, 0, 0], float(other)
    # The dropout seed comes from torch's default generator: torch.manual_seed fixes the mask.
    seed = int(torch.randint(0, 2**31 - 1, (1,))) if training else 0
    scale = 1.0 / (1.0 - p) if p < 1.0 else 0.0
    ax = dim % 3
    L = x1.shape[ax]
    inner = x1.shape[ax + 1 :].numel()
    J = x1.numel() // L
    bj, bl = (4, 256) if inner == 1 else (64, 16)  # contiguous or strided slices
    if x1.numel():
        _log_softmax_dropout_kernel[(triton.cdiv(J, bj),)](
            x1, x2, other if o_tensor else x1, d, J, L, inner, N, D, *o_st, o_val, float(p),
            scale, seed, O_TENSOR=o_tensor, TRAINING=bool(training), BLOCK_J=bj, BLOCK_L=bl,
        )  # fmt: skip

    def grid(meta):
        return (triton.cdiv(N, meta["BLOCK_M"]), triton.cdiv(P, meta["BLOCK_N"]), B)

    if y.numel():
        _bmm_kernel[grid](d, m2, y, N, D, P)
    if out is not None:
        out.copy_(y)
        return out
    return y
