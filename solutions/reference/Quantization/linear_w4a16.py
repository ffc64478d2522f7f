"""W4A16 linear in Triton: pack the weight to int4 (two per byte), then an fp16 GEMM on it.

Pack: one program per (row n, group of 128 k) loads the group's even and odd elements, takes
the scale s = max |w| / 7 (div_rn: IEEE division), rounds w / s half to even with the float32
trick (v + 1.5*2^23) - 1.5*2^23 and stores byte j of row n as (q[2j] & 15) | (q[2j+1] << 4):
low nibble even k, high nibble odd k, both two's complement.

GEMM: the tutorial's tiled kernel over (M, N) with BLOCK_K dividing 128, so a K tile never
straddles a group. A tile's bytes are unpacked with shifts ((p << 4) >> 4 sign-extends the low
nibble, p >> 4 the high one) into exact float16 integers, and the even and odd halves of the X
tile (strided loads) are multiplied with them by two fp16 tensor-core dots into fp32. The
group's scale multiplies that fp32 partial before it joins the accumulator; bias is added in
fp32 and the result rounded once to fp16.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

GROUP = 128
RINT_MAGIC = tl.constexpr(12582912.0)  # 1.5 * 2**23 (kernels may read only constexpr globals)


@triton.jit
def _pack_int4_kernel(w_ptr, p_ptr, s_ptr, K, KP, NG, GROUP: tl.constexpr):
    n, g = tl.program_id(0).to(tl.int64), tl.program_id(1)
    j = g * (GROUP // 2) + tl.arange(0, GROUP // 2)  # byte index: k = 2j and 2j + 1
    ke, ko = 2 * j, 2 * j + 1
    we = tl.load(w_ptr + n * K + ke, mask=ke < K, other=0.0).to(tl.float32)
    wo = tl.load(w_ptr + n * K + ko, mask=ko < K, other=0.0).to(tl.float32)
    s = libdevice.div_rn(tl.max(tl.maximum(tl.abs(we), tl.abs(wo)), axis=0), 7.0)
    s = tl.where(s == 0.0, 1.0, s)  # an all-zero group quantizes with scale 1
    tl.store(s_ptr + n * NG + g, s)
    qe = tl.minimum(tl.maximum(libdevice.div_rn(we, s), -8.0), 7.0)
    qo = tl.minimum(tl.maximum(libdevice.div_rn(wo, s), -8.0), 7.0)
    qe = ((qe + RINT_MAGIC) - RINT_MAGIC).to(tl.int32)  # round half to even
    qo = ((qo + RINT_MAGIC) - RINT_MAGIC).to(tl.int32)
    byte = (qe & 15) | ((qo & 15) << 4)  # 0..255
    byte = tl.where(byte >= 128, byte - 256, byte)  # as a two's complement int8
    tl.store(p_ptr + n * KP + j, byte.to(tl.int8), mask=j < KP)


@triton.autotune(
    configs=[  # the first config is also the one used by the CPU interpreter
        triton.Config(
            {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=4, num_warps=4
        ),
        triton.Config(
            {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8},
            num_stages=3,
            num_warps=8,
        ),
        triton.Config(
            {"BLOCK_M": 16, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8}, num_stages=4, num_warps=4
        ),
        triton.Config(
            {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=4, num_warps=4
        ),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def _w4a16_gemm_kernel(
    x_ptr,
    p_ptr,
    s_ptr,
    b_ptr,
    y_ptr,
    M,
    N,
    K,
    KP,
    NG,
    HAS_BIAS: tl.constexpr,
    GROUP: tl.constexpr,
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
    m_ok, n_ok = offs_m < M, offs_n < N
    offs_j = tl.arange(0, BLOCK_K // 2)
    x_rows = x_ptr + offs_m[:, None].to(tl.int64) * K
    p_cols = p_ptr + offs_n[None, :].to(tl.int64) * KP
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        j = k0 // 2 + offs_j  # bytes of this K tile
        ke, ko = 2 * j, 2 * j + 1
        xe = tl.load(x_rows + ke[None, :], mask=m_ok[:, None] & (ke[None, :] < K), other=0.0)
        xo = tl.load(x_rows + ko[None, :], mask=m_ok[:, None] & (ko[None, :] < K), other=0.0)
        p = tl.load(p_cols + j[:, None], mask=(j[:, None] < KP) & n_ok[None, :], other=0)
        lo = (p << 4) >> 4  # sign-extended low nibble: the even k
        hi = p >> 4  # arithmetic shift: the odd k
        part = tl.dot(xe, lo.to(tl.float16))  # int4 values are exact in fp16; fp32 result
        part = tl.dot(xo, hi.to(tl.float16), part)
        s = tl.load(s_ptr + offs_n.to(tl.int64) * NG + k0 // GROUP, mask=n_ok, other=0.0)
        acc += part * s[None, :]  # the tile lies in one group: one scale per column

    if HAS_BIAS:
        acc += tl.load(b_ptr + offs_n, mask=n_ok, other=0.0).to(tl.float32)[None, :]
    y_ptrs = y_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :]
    tl.store(y_ptrs, acc.to(tl.float16), mask=m_ok[:, None] & n_ok[None, :])


def linear_w4a16(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor = None):
    n, k = weight.shape
    if input.shape[-1] != k:
        raise ValueError(f"input {tuple(input.shape)} does not match weight {(n, k)}")
    x = input.contiguous().view(-1, k)
    w = weight.contiguous()
    m = x.shape[0]
    kp, ng = triton.cdiv(k, 2), triton.cdiv(k, GROUP)
    packed = torch.empty((n, kp), device=w.device, dtype=torch.int8)  # two int4 per byte
    scales = torch.empty((n, ng), device=w.device, dtype=torch.float32)
    _pack_int4_kernel[(n, ng)](w, packed, scales, k, kp, ng, GROUP=GROUP)
    y = torch.empty((m, n), device=x.device, dtype=torch.float16)
    b = bias.contiguous() if bias is not None else scales  # any pointer when there is no bias

    def grid(meta):
        return (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)

    _w4a16_gemm_kernel[grid](
        x, packed, scales, b, y, m, n, k, kp, ng, HAS_BIAS=bias is not None, GROUP=GROUP
    )
    return y.view(*input.shape[:-1], n)
