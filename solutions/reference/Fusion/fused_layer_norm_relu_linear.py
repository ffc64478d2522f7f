"""Linear + ReLU + LayerNorm in Triton: a matmul with a bias/ReLU epilogue, then a group norm.

The input is viewed as an (M, K) matrix and multiplied by weight^T, read straight from the
(N, K) row-major weight through swapped strides. Each program computes one BLOCK_M x BLOCK_N
tile with full-fp32 "ieee" dots (no TF32), grouped along M for L2 reuse, adds the bias and
applies ReLU in registers. A second kernel normalises each group of G contiguous elements
(G = prod(normalized_shape)), one program per group: one pass for the statistics, merging
chunk means and squared deviations with Chan's formula, and one pass to write the result.
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
def _linear_relu_kernel(
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
    acc = tl.maximum(acc, 0.0)
    z_ptrs = z_ptr + offs_m.to(tl.int64)[:, None] * N + offs_n[None, :]
    tl.store(z_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _layer_norm_kernel(z_ptr, G, eps, BLOCK: tl.constexpr):
    base = z_ptr + tl.program_id(0).to(tl.int64) * G  # one contiguous group
    cnt = tl.zeros((1,), tl.float32)
    mean = tl.zeros((1,), tl.float32)
    m2 = tl.zeros((1,), tl.float32)
    for i0 in range(0, G, BLOCK):
        offs = i0 + tl.arange(0, BLOCK)
        ok = offs < G
        v = tl.load(base + offs, mask=ok, other=0.0)
        c_cnt = tl.sum(ok.to(tl.float32), axis=0)
        c_mean = tl.sum(v, axis=0) / c_cnt
        dev = tl.where(ok, v - c_mean, 0.0)
        tot = cnt + c_cnt  # Chan's merge of (cnt, mean, m2) with the chunk
        delta = c_mean - mean
        mean = mean + delta * (c_cnt / tot)
        m2 = m2 + tl.sum(dev * dev, axis=0) + delta * delta * cnt * (c_cnt / tot)
        cnt = tot
    inv_std = 1.0 / tl.sqrt(m2 / cnt + eps)  # biased variance
    for i0 in range(0, G, BLOCK):
        offs = i0 + tl.arange(0, BLOCK)
        ok = offs < G
        v = tl.load(base + offs, mask=ok, other=0.0)
        tl.store(base + offs, (v - mean) * inv_std, mask=ok)


def fused_layer_norm_relu_linear(
    input, weight, bias=None, normalized_shape=None, eps=1e-5, elementwise_affine=True
):
    # elementwise_affine stands for a fresh LayerNorm (weight 1, bias 0): nothing to apply.
    K = input.shape[-1]
    x = input.reshape(-1, K).contiguous()
    w = weight.contiguous()
    M, N = x.shape[0], w.shape[0]
    z = torch.empty((*input.shape[:-1], N), device=x.device, dtype=torch.float32)
    if normalized_shape is None:
        normalized_shape = (N,)
    elif isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    if tuple(z.shape[z.dim() - len(normalized_shape) :]) != tuple(normalized_shape):
        raise ValueError(f"normalized_shape {normalized_shape} does not end {tuple(z.shape)}")
    G = 1
    for s in normalized_shape:
        G *= s
    if M and N:
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
        _linear_relu_kernel[grid](
            x, w, bias if bias is not None else w, z, M, N, K, HAS_BIAS=bias is not None
        )
        _layer_norm_kernel[(z.numel() // G,)](z, G, float(eps), BLOCK=1024, num_warps=4)
    return z
