"""softmax -> dropout feed-forward block with residual and layer norm, in four Triton kernels.

All leading dims are flattened into M rows.
1. Z1 = X W1: a tiled matmul (full fp32 "ieee" dots, no TF32, grouped launch order).
2. One program per row: softmax over the D_k entries held in registers, then dropout with
   tl.rand(seed, flat index) >= p (Philox: a pure function of seed and index) and 1/(1-p)
   scaling, written back in place. The seed is drawn from torch's default generator, so
   torch.manual_seed fixes the mask.
3. Z = Z3 W2 + R: the same matmul kernel with the residual added in its epilogue, read through
   broadcast strides (a (D_out,) or (N, D_out) residual is never expanded).
4. One program per row: mean, then mean squared deviation (two passes over registers), and the
   normalised row, in place.
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
def _matmul_kernel(
    a_ptr,
    b_ptr,
    r_ptr,
    c_ptr,
    M,
    N,
    K,
    SEQ,
    r_s0,
    r_s1,
    r_s2,
    HAS_RES: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    """C (M, N) = A (M, K) @ B (K, N), all row-major, plus R[m // SEQ, m % SEQ, n]."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * num_pid_n  # grouped launch order for L2 reuse
    first_m = (pid // per_group) * GROUP_M
    group_rows = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % per_group) % group_rows)
    pid_n = (pid % per_group) // group_rows

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m.to(tl.int64)[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k0
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")  # full fp32 products, no TF32
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    ok = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    if HAS_RES:
        lead = (offs_m // SEQ).to(tl.int64)
        pos = (offs_m % SEQ).to(tl.int64)
        r_ptrs = r_ptr + lead[:, None] * r_s0 + pos[:, None] * r_s1 + offs_n[None, :] * r_s2
        acc += tl.load(r_ptrs, mask=ok, other=0.0)
    tl.store(c_ptr + offs_m.to(tl.int64)[:, None] * N + offs_n[None, :], acc, mask=ok)


@triton.jit
def _softmax_dropout_kernel(z_ptr, D, p, seed, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    ok = cols < D
    z = tl.load(z_ptr + row * D + cols, mask=ok, other=float("-inf"))
    e = tl.exp(z - tl.max(z, axis=0))
    s = e / tl.sum(e, axis=0)
    keep = tl.rand(seed, row * D + cols) >= p  # uniform in [0, 1): dropped with probability p
    s = tl.where(keep, s * (1.0 / (1.0 - p)), 0.0)
    tl.store(z_ptr + row * D + cols, s, mask=ok)


@triton.jit
def _layer_norm_kernel(y_ptr, D, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    ok = cols < D
    v = tl.load(y_ptr + row * D + cols, mask=ok, other=0.0)
    mean = tl.sum(v, axis=0) / D
    dev = tl.where(ok, v - mean, 0.0)
    var = tl.sum(dev * dev, axis=0) / D  # biased, as layer_norm uses
    tl.store(y_ptr + row * D + cols, dev / tl.sqrt(var + eps), mask=ok)


def _matmul(a, b, c, residual=None, seq=1):
    M, K = a.shape
    N = b.shape[1]
    strides = residual.stride() if residual is not None else (0, 0, 0)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    _matmul_kernel[grid](
        a,
        b,
        residual if residual is not None else c,
        c,
        M,
        N,
        K,
        seq,
        *strides,
        HAS_RES=residual is not None,
    )


def fused_transformer_block(
    input, weight1, weight2, residual, dropout_p=0.1, eps=1e-05, *, out=None
):
    *lead, seq, d_in = input.shape
    d_k, d_out = weight1.shape[1], weight2.shape[1]
    x = input.reshape(-1, d_in).contiguous()
    w1, w2 = weight1.contiguous(), weight2.contiguous()
    M = x.shape[0]
    if max(d_k, d_out) > 16384:
        raise NotImplementedError("rows of up to 16384 entries")
    # residual as a (lead, seq, d_out) view with broadcast (zero) strides
    r = residual.expand(*lead, seq, d_out).reshape(-1, seq, d_out)
    y = torch.empty((*lead, seq, d_out), device=input.device, dtype=torch.float32)
    if M == 0:
        return y
    z = torch.empty((M, d_k), device=input.device, dtype=torch.float32)
    # The dropout seed comes from torch's default generator: torch.manual_seed fixes the mask.
    seed = int(torch.randint(0, 2**31 - 1, (1,)))
    _matmul(x, w1, z)
    bk = triton.next_power_of_2(d_k)
    _softmax_dropout_kernel[(M,)](
        z, d_k, float(dropout_p), seed, BLOCK=bk, num_warps=4 if bk <= 2048 else 8
    )
    y2 = y.view(M, d_out)
    _matmul(z, w2, y2, r, seq)
    bo = triton.next_power_of_2(d_out)
    _layer_norm_kernel[(M,)](y2, d_out, float(eps), BLOCK=bo, num_warps=4 if bo <= 2048 else 8)
    if out is not None:
        out.copy_(y)
        return out
    return y
