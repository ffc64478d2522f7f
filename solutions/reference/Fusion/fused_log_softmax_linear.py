"""Linear + log_softmax in Triton: a matmul with a bias epilogue, then a strided log-softmax.

The input is viewed as an (M, K) matrix and multiplied by weight^T, read straight from the
(N, K) row-major weight through swapped strides. Each program computes one BLOCK_M x BLOCK_N
tile with full-fp32 "ieee" dots (no TF32), grouped along M for L2 reuse, and adds the bias.
The logits are then seen as (outer, L, inner) with the softmax dim in the middle; a second
kernel owns BLOCK_J softmax slices, runs an online log-sum-exp over L in one pass (running
maximum, sum rescaled whenever the maximum grows, so nothing overflows), and writes
z - max - log(sum) in a second pass, in float32 or, for dtype=torch.float64, in float64.
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
def _linear_kernel(
    x_ptr, w_ptr, b_ptr, z_ptr, M, N, K,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):  # fmt: skip
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
    z_ptrs = z_ptr + offs_m.to(tl.int64)[:, None] * N + offs_n[None, :]
    tl.store(z_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _log_softmax_kernel(
    z_ptr, y_ptr, J, L, inner, F64: tl.constexpr, BLOCK_J: tl.constexpr, BLOCK_L: tl.constexpr
):
    offs_j = tl.program_id(0).to(tl.int64) * BLOCK_J + tl.arange(0, BLOCK_J)
    base = (offs_j // inner) * L * inner + offs_j % inner  # element 0 of each slice
    dt = tl.float64 if F64 else tl.float32
    m = tl.full((BLOCK_J,), float("-inf"), dt)
    s = tl.zeros((BLOCK_J,), dt)
    for l0 in range(0, L, BLOCK_L):
        offs_l = l0 + tl.arange(0, BLOCK_L)
        ok = (offs_j[:, None] < J) & (offs_l[None, :] < L)
        addr = base[:, None] + offs_l.to(tl.int64)[None, :] * inner
        z = tl.load(z_ptr + addr, mask=ok, other=float("-inf")).to(dt)
        new_m = tl.maximum(m, tl.max(z, axis=1))
        safe_m = tl.where(new_m == float("-inf"), 0.0, new_m)  # slices with nothing yet
        s = s * tl.exp(m - safe_m) + tl.sum(tl.exp(z - safe_m[:, None]), axis=1)
        m = new_m
    lse = m + tl.log(s)
    for l0 in range(0, L, BLOCK_L):
        offs_l = l0 + tl.arange(0, BLOCK_L)
        ok = (offs_j[:, None] < J) & (offs_l[None, :] < L)
        addr = base[:, None] + offs_l.to(tl.int64)[None, :] * inner
        z = tl.load(z_ptr + addr, mask=ok, other=0.0).to(dt)
        tl.store(y_ptr + addr, z - lse[:, None], mask=ok)


def fused_log_softmax_linear(input, weight, bias=None, dim=-1, dtype=None):
    K = input.shape[-1]
    x = input.reshape(-1, K).contiguous()
    w = weight.contiguous()
    M, N = x.shape[0], w.shape[0]
    z = torch.empty((*input.shape[:-1], N), device=x.device, dtype=torch.float32)
    f64 = dtype is torch.float64
    if dtype not in (None, torch.float32, torch.float64):
        raise NotImplementedError("dtype must be None, float32 or float64")
    y = torch.empty(z.shape, device=x.device, dtype=torch.float64 if f64 else torch.float32)
    if M and N:
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
        _linear_kernel[grid](
            x, w, bias if bias is not None else w, z, M, N, K, HAS_BIAS=bias is not None
        )
        d = dim % z.dim()
        L = z.shape[d]
        inner = z.shape[d + 1 :].numel()
        J = z.numel() // L
        bj, bl = (4, 256) if inner == 1 else (64, 16)  # contiguous or strided slices
        _log_softmax_kernel[(triton.cdiv(J, bj),)](
            z, y, J, L, inner, F64=f64, BLOCK_J=bj, BLOCK_L=bl, num_warps=4
        )
    return y
