"""W8A8 attention in Triton: per-token int8 Q, K, V and a flash-attention style fused kernel.

A quantizer kernel gives every token row of Q, K and V its scale s = max |row| / 127 and int8
values clamp(rint(x / s), -127, 127): rint (round half to even) is the float32 trick
(v + 1.5*2^23) - 1.5*2^23 and the divisions use div_rn, as IEEE division does.

The attention kernel owns BLOCK_M query rows of one (batch, head) and streams the keys in
BLOCK_N blocks, keeping the running max and sum of an online softmax: an int8 tl.dot gives the
exact int32 Qq Kq^T, which is dequantized as ((acc * sq) * sk) / sqrt(d); the probabilities stay
fp32 and multiply the dequantized V block (Vq * sv) with an fp32 "ieee" dot (no TF32). The head
dim is zero-padded to a power of two (>= 32, the int8 dot's minimum), which changes no sum.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

RINT_MAGIC = tl.constexpr(12582912.0)  # 1.5 * 2**23 (kernels may read only constexpr globals)


@triton.jit
def _quant_tokens_kernel(x_ptr, q_ptr, s_ptr, R, D, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_D)
    mask = (rows[:, None] < R) & (cols[None, :] < D)
    idx = rows[:, None].to(tl.int64) * D + cols[None, :]
    x = tl.load(x_ptr + idx, mask=mask, other=0.0)
    s = libdevice.div_rn(tl.max(tl.abs(x), axis=1), 127.0)
    s = tl.where(s == 0.0, 1.0, s)  # an all-zero token quantizes with scale 1
    q = tl.minimum(tl.maximum(libdevice.div_rn(x, s[:, None]), -127.0), 127.0)
    q = (q + RINT_MAGIC) - RINT_MAGIC  # round half to even
    tl.store(q_ptr + idx, q.to(tl.int8), mask=mask)
    tl.store(s_ptr + rows, s, mask=rows < R)


@triton.jit
def _attention_w8a8_kernel(
    qq_ptr,
    kq_ptr,
    vq_ptr,
    sq_ptr,
    sk_ptr,
    sv_ptr,
    o_ptr,
    LQ,
    LK,
    D,
    sm_scale,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    pid_m, bh = tl.program_id(0), tl.program_id(1).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    m_ok, d_ok = offs_m < LQ, offs_d < D
    q_idx = (bh * LQ + offs_m[:, None]) * D + offs_d[None, :]
    qq = tl.load(qq_ptr + q_idx, mask=m_ok[:, None] & d_ok[None, :], other=0)
    sq = tl.load(sq_ptr + bh * LQ + offs_m, mask=m_ok, other=1.0)

    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)  # running row max
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)  # running sum of exp
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    for n0 in range(0, LK, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        n_ok = offs_n < LK
        kt = tl.load(
            kq_ptr + (bh * LK + offs_n[None, :]) * D + offs_d[:, None],
            mask=d_ok[:, None] & n_ok[None, :],
            other=0,
        )  # Kq^T tile (D, N)
        s_int = tl.dot(qq, kt, out_dtype=tl.int32)  # int8 x int8 -> exact int32
        sk = tl.load(sk_ptr + bh * LK + offs_n, mask=n_ok, other=1.0)
        s = ((s_int.to(tl.float32) * sq[:, None]) * sk[None, :]) * sm_scale
        s = tl.where(n_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)  # rescales what was accumulated under the old max
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(
            vq_ptr + (bh * LK + offs_n[:, None]) * D + offs_d[None, :],
            mask=n_ok[:, None] & d_ok[None, :],
            other=0,
        )
        sv = tl.load(sv_ptr + bh * LK + offs_n, mask=n_ok, other=0.0)
        vd = v.to(tl.float32) * sv[:, None]  # dequantized V block
        acc = tl.dot(p, vd, acc * alpha[:, None], input_precision="ieee")  # fp32 P, no TF32
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + q_idx, out, mask=m_ok[:, None] & d_ok[None, :])


def _quantize_tokens(x, rows, d):
    q = torch.empty(x.shape, device=x.device, dtype=torch.int8)
    s = torch.empty(x.shape[:-1], device=x.device, dtype=torch.float32)
    block_d = triton.next_power_of_2(d)
    block_r = max(1, 4096 // block_d)
    _quant_tokens_kernel[(triton.cdiv(rows, block_r),)](
        x, q, s, rows, d, BLOCK_R=block_r, BLOCK_D=block_d
    )
    return q, s


def attention_w8a8(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    q, k, v = query.contiguous(), key.contiguous(), value.contiguous()
    *lead, lq, d = q.shape
    lk = k.shape[-2]
    if tuple(k.shape) != (*lead, lk, d) or v.shape != k.shape:
        raise ValueError(f"shapes q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}")
    bh = q.numel() // (lq * d)
    qq, sq = _quantize_tokens(q, bh * lq, d)
    kq, sk = _quantize_tokens(k, bh * lk, d)
    vq, sv = _quantize_tokens(v, bh * lk, d)
    out = torch.empty_like(q)
    block_d = max(32, triton.next_power_of_2(d))
    block_m = 64
    _attention_w8a8_kernel[(triton.cdiv(lq, block_m), bh)](
        qq,
        kq,
        vq,
        sq,
        sk,
        sv,
        out,
        lq,
        lk,
        d,
        1.0 / d**0.5,
        BLOCK_M=block_m,
        BLOCK_N=64,
        BLOCK_D=block_d,
        num_warps=4 if block_d <= 64 else 8,
    )
    return out
