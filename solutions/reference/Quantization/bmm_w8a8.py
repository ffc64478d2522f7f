"""W8A8 batched matmul in Triton: int8 quantization per row / column, int8 dot, dequantize.

Three kernels. Rows of X (all batches at once: (B*M, K)) and column blocks of each W[b] are
quantized in two passes over their data: the first finds max |v| for the scale, the second
writes clamp(rint(v / s), -127, 127) as int8. rint (round half to even) is the float32 trick
(v + 1.5*2^23) - 1.5*2^23, exact for |v| <= 2^22; divisions use div_rn so the scales and
quotients match IEEE division. The batched matmul is the tutorial's tiled kernel on int8 tiles
with an exact int32 accumulator and a batch grid axis; the epilogue scales by sx, then sw.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

RINT_MAGIC = tl.constexpr(12582912.0)  # 1.5 * 2**23 (kernels may read only constexpr globals)


@triton.jit
def _quant_rows_kernel(x_ptr, q_ptr, s_ptr, K, BLOCK_K: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_K)
    amax = tl.zeros((BLOCK_K,), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        v = tl.load(x_ptr + row * K + k0 + offs, mask=k0 + offs < K, other=0.0)
        amax = tl.maximum(amax, tl.abs(v))
    s = libdevice.div_rn(tl.max(amax, axis=0), 127.0)
    s = tl.where(s == 0.0, 1.0, s)  # an all-zero row quantizes with scale 1
    tl.store(s_ptr + row, s)
    for k0 in range(0, K, BLOCK_K):
        mask = k0 + offs < K
        v = tl.load(x_ptr + row * K + k0 + offs, mask=mask, other=0.0)
        q = tl.minimum(tl.maximum(libdevice.div_rn(v, s), -127.0), 127.0)
        q = (q + RINT_MAGIC) - RINT_MAGIC  # round half to even
        tl.store(q_ptr + row * K + k0 + offs, q.to(tl.int8), mask=mask)


@triton.jit
def _quant_cols_kernel(w_ptr, q_ptr, s_ptr, K, N, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    batch = tl.program_id(1).to(tl.int64)
    w_ptr += batch * K * N
    q_ptr += batch * K * N
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = cols < N
    offs_k = tl.arange(0, BLOCK_K)
    amax = tl.zeros((BLOCK_K, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rows = (k0 + offs_k).to(tl.int64)
        mask = (rows < K)[:, None] & n_ok[None, :]
        v = tl.load(w_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
        amax = tl.maximum(amax, tl.abs(v))
    s = libdevice.div_rn(tl.max(amax, axis=0), 127.0)
    s = tl.where(s == 0.0, 1.0, s)  # an all-zero column quantizes with scale 1
    tl.store(s_ptr + batch * N + cols, s, mask=n_ok)
    for k0 in range(0, K, BLOCK_K):
        rows = (k0 + offs_k).to(tl.int64)
        mask = (rows < K)[:, None] & n_ok[None, :]
        v = tl.load(w_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
        q = tl.minimum(tl.maximum(libdevice.div_rn(v, s[None, :]), -127.0), 127.0)
        q = (q + RINT_MAGIC) - RINT_MAGIC  # round half to even
        tl.store(q_ptr + rows[:, None] * N + cols[None, :], q.to(tl.int8), mask=mask)


@triton.autotune(
    configs=[  # the first config is also the one used by the CPU interpreter
        triton.Config(
            {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=4, num_warps=4
        ),
        triton.Config(
            {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "GROUP_M": 8},
            num_stages=3,
            num_warps=8,
        ),
        triton.Config(
            {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8},
            num_stages=4,
            num_warps=8,
        ),
        triton.Config(
            {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 128, "GROUP_M": 8}, num_stages=4, num_warps=4
        ),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def _int8_bmm_kernel(
    a_ptr,
    b_ptr,
    sx_ptr,
    sw_ptr,
    y_ptr,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    a_ptr += batch * M * K
    b_ptr += batch * K * N
    y_ptr += batch * M * N
    sx_ptr += batch * M
    sw_ptr += batch * N
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
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k0
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & k_ok[None, :], other=0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & (offs_n[None, :] < N), other=0)
        acc = tl.dot(a, b, acc, out_dtype=tl.int32)  # int8 x int8 -> exact int32
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N

    m_ok, n_ok = offs_m < M, offs_n < N
    sx = tl.load(sx_ptr + offs_m, mask=m_ok, other=0.0)
    sw = tl.load(sw_ptr + offs_n, mask=n_ok, other=0.0)
    y = (acc.to(tl.float32) * sx[:, None]) * sw[None, :]  # the recipe's order of the scalings
    y_ptrs = y_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :]
    tl.store(y_ptrs, y, mask=m_ok[:, None] & n_ok[None, :])


def bmm_w8a8(input: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
    x, w = input.contiguous(), mat2.contiguous()
    B, M, K = x.shape
    B2, K2, N = w.shape
    if B != B2 or K != K2:
        raise ValueError(f"bmm shapes do not match: {tuple(x.shape)} @ {tuple(w.shape)}")
    dev = x.device
    xq = torch.empty((B, M, K), device=dev, dtype=torch.int8)
    wq = torch.empty((B, K, N), device=dev, dtype=torch.int8)
    sx = torch.empty((B, M), device=dev, dtype=torch.float32)
    sw = torch.empty((B, N), device=dev, dtype=torch.float32)
    y = torch.empty((B, M, N), device=dev, dtype=torch.float32)
    _quant_rows_kernel[(B * M,)](x, xq, sx, K, BLOCK_K=1024)  # rows of all batches at once
    _quant_cols_kernel[(triton.cdiv(N, 64), B)](w, wq, sw, K, N, BLOCK_K=32, BLOCK_N=64)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]), B)

    _int8_bmm_kernel[grid](xq, wq, sx, sw, y, M, N, K)
    return y
