"""Attention forward in Triton, flash style: the (Sq, Sk) score matrix is never materialised.

Each program owns BLOCK_M queries of one (batch, head) and streams the keys and values in
BLOCK_N blocks. Scores S = Q K^T come from full-fp32 "ieee" dots (no TF32) and are scaled by
softmax_scale * log2(e), so exp2 gives the softmax's exponentials. An online softmax keeps the
running row maximum m, the running sum l of exp2(S - m), and the accumulator of P V, rescaling
both by exp2(m_old - m_new) whenever the maximum grows; O = acc / l at the end. Keys beyond Sk,
and with causal=True keys j > i (top-left aligned mask), score -inf; with the causal mask the
key loop also stops after the block's last query. D is padded to a power of two with zeros.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _attention_fwd_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    Sq,
    Sk,
    D,
    qk_scale,
    CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)  # flattened (batch, head)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < D
    q = tl.load(
        q_ptr + bh * Sq * D + offs_m[:, None] * D + offs_d[None, :],
        mask=(offs_m[:, None] < Sq) & d_ok[None, :],
        other=0.0,
    )
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    hi = Sk
    if CAUSAL:
        hi = tl.minimum(Sk, (pid_m + 1) * BLOCK_M)  # later keys are masked for every query here
    for n0 in range(0, hi, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        n_ok = offs_n < Sk
        kt = tl.load(
            k_ptr + bh * Sk * D + offs_n[None, :] * D + offs_d[:, None],
            mask=d_ok[:, None] & n_ok[None, :],
            other=0.0,
        )  # K^T block (D, N)
        s = tl.dot(q, kt, input_precision="ieee") * qk_scale  # log2-scaled scores
        valid = n_ok[None, :]
        if CAUSAL:
            valid = valid & (offs_n[None, :] <= offs_m[:, None])
        s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)  # rescales what was accumulated under the old maximum
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(
            v_ptr + bh * Sk * D + offs_n[:, None] * D + offs_d[None, :],
            mask=n_ok[:, None] & d_ok[None, :],
            other=0.0,
        )
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(
        o_ptr + bh * Sq * D + offs_m[:, None] * D + offs_d[None, :],
        o,
        mask=(offs_m[:, None] < Sq) & d_ok[None, :],
    )


def attention(q, k, v, causal: bool = False, softmax_scale=None, *, out=None):
    *lead, Sq, D = q.shape
    Sk = k.shape[-2]
    if k.shape[-1] != D or v.shape[-2:] != (Sk, D):
        raise ValueError(
            f"shapes do not fit: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    qc = q.contiguous().view(-1, Sq, D)
    kc = k.contiguous().view(-1, Sk, D)
    vc = v.contiguous().view(-1, Sk, D)
    BH = qc.shape[0]
    o = torch.empty((*lead, Sq, D), device=q.device, dtype=torch.float32)
    scale = softmax_scale if softmax_scale is not None else D**-0.5
    if BH and Sq:
        BLOCK_D = max(16, triton.next_power_of_2(D))
        BLOCK_M, BLOCK_N = 64, 64 if BLOCK_D <= 64 else 32
        grid = (triton.cdiv(Sq, BLOCK_M), BH)
        _attention_fwd_kernel[grid](
            qc,
            kc,
            vc,
            o,
            Sq,
            Sk,
            D,
            float(scale) * 1.4426950408889634,
            CAUSAL=bool(causal),
            BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N,
            BLOCK_D=BLOCK_D,
            num_warps=4,
            num_stages=2,
        )
    if out is not None:
        out.copy_(o)
        return out
    return o
