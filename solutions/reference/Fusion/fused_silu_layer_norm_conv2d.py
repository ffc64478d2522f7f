"""conv2d -> layer norm over (C, OH, OW) -> scale -> SiLU in Triton.

1. An implicit-GEMM convolution: per group, rows are output pixels (n, oh, ow), columns the
   group's output channels, the contraction runs over C_in/groups * kH * kW. Each program
   gathers a BLOCK_M x BLOCK_K slice of the (never materialised) im2col matrix from the NCHW
   input (masks do the zero padding) and multiplies it by the (C_out, K) weight in full fp32
   (input_precision="ieee", no TF32); Y goes straight into the output buffer.
2. Sample statistics: each sample's C_out * OH * OW values form one contiguous block. A grid of
   (sample, chunk) programs sums the chunks; a second sweep, with the mean rebuilt from those
   partial sums, sums the squared deviations (a two-pass variance, stable for any mean); a tiny
   kernel turns the partials into mean and 1 / sqrt(var + eps) per sample.
3. An element-wise pass computes silu(((Y - mean) * rstd) * weight) in place; weight is read
   per channel or per (c, oh, ow) element.
"""

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[  # the first config is also the one used by the CPU interpreter
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 32}, num_stages=3, num_warps=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32}, num_stages=3, num_warps=8),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}, num_stages=3, num_warps=8),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 16, "BLOCK_K": 32}, num_stages=3, num_warps=4),
    ],
    key=["P", "C_out_g", "K"],
)
@triton.jit
def _conv2d_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    C_in,
    H,
    W,
    C_out,
    OH,
    OW,
    P,
    C_in_g,
    C_out_g,
    K,
    stride_h,
    stride_w,
    pad_h,
    pad_w,
    dil_h,
    dil_w,
    KH: tl.constexpr,
    KW: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    g = tl.program_id(2)  # group
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # output pixel (n * OH + oh) * OW + ow
    m_ok = offs_m < P
    n = (offs_m // (OH * OW)).to(tl.int64)
    pix = offs_m % (OH * OW)
    ih0 = (pix // OW) * stride_h - pad_h  # top-left corner of each pixel's receptive field
    iw0 = (pix % OW) * stride_w - pad_w
    x_base = x_ptr + n * C_in * H * W + g * C_in_g * H * W
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = offs_n < C_out_g
    co = g * C_out_g + offs_n
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        k_ok = offs_k < K
        ci = offs_k // (KH * KW)  # k = (ci * KH + kh) * KW + kw
        kh = (offs_k // KW) % KH
        kw = offs_k % KW
        ih = ih0[:, None] + kh[None, :] * dil_h
        iw = iw0[:, None] + kw[None, :] * dil_w
        a_ok = m_ok[:, None] & k_ok[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        a = tl.load(x_base[:, None] + ci[None, :] * H * W + ih * W + iw, mask=a_ok, other=0.0)
        b_ok = n_ok[None, :] & k_ok[:, None]
        b = tl.load(w_ptr + co[None, :] * K + offs_k[:, None], mask=b_ok, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")  # full fp32 products, no TF32
    if HAS_BIAS:
        acc += tl.load(b_ptr + co, mask=n_ok, other=0.0)[None, :]
    y_ptrs = y_ptr + n[:, None] * C_out * OH * OW + co[None, :] * OH * OW + pix[:, None]
    tl.store(y_ptrs, acc, mask=m_ok[:, None] & n_ok[None, :])


@triton.jit
def _chunk_sum_kernel(
    y_ptr,
    psum_ptr,
    out_ptr,
    M,
    CHUNK,
    SPLIT,
    CENTERED: tl.constexpr,
    SPLIT_P2: tl.constexpr,
    BLOCK: tl.constexpr,
):
    n = tl.program_id(0)
    part = tl.program_id(1)
    if CENTERED:  # the sample's mean, from the first sweep's partial sums
        k = tl.arange(0, SPLIT_P2)
        mean = tl.sum(tl.load(psum_ptr + n * SPLIT + k, mask=k < SPLIT, other=0.0), axis=0) / M
    base = n.to(tl.int64) * M
    lo = part * CHUNK
    hi = tl.minimum(lo + CHUNK, M)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(lo, hi, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        ok = offs < hi
        v = tl.load(y_ptr + base + offs, mask=ok, other=0.0)
        if CENTERED:
            dev = tl.where(ok, v - mean, 0.0)
            acc += dev * dev
        else:
            acc += v
    tl.store(out_ptr + n * SPLIT + part, tl.sum(acc, axis=0))


@triton.jit
def _finalize_kernel(psum_ptr, psq_ptr, stats_ptr, M, SPLIT, eps, SPLIT_P2: tl.constexpr):
    n = tl.program_id(0)
    k = tl.arange(0, SPLIT_P2)
    mean = tl.sum(tl.load(psum_ptr + n * SPLIT + k, mask=k < SPLIT, other=0.0), axis=0) / M
    var = tl.sum(tl.load(psq_ptr + n * SPLIT + k, mask=k < SPLIT, other=0.0), axis=0) / M
    tl.store(stats_ptr + 2 * n, mean)
    tl.store(stats_ptr + 2 * n + 1, 1.0 / tl.sqrt(var + eps))


@triton.jit
def _norm_scale_silu_kernel(
    y_ptr, stats_ptr, w_ptr, total, M, HW, PER_CHANNEL: tl.constexpr, BLOCK: tl.constexpr
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    n = offs // M
    within = offs % M  # (c, oh, ow) index inside the sample
    mean = tl.load(stats_ptr + 2 * n, mask=mask, other=0.0)
    rstd = tl.load(stats_ptr + 2 * n + 1, mask=mask, other=0.0)
    if PER_CHANNEL:
        w = tl.load(w_ptr + within // HW, mask=mask, other=0.0)
    else:
        w = tl.load(w_ptr + within, mask=mask, other=0.0)
    v = (tl.load(y_ptr + offs, mask=mask, other=0.0) - mean) * rstd * w
    tl.store(y_ptr + offs, v / (1.0 + tl.exp(-v)), mask=mask)  # v * sigmoid(v)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def fused_silu_layer_norm_conv2d(
    x,
    weight,
    conv_weight,
    conv_bias=None,
    conv_stride=1,
    conv_padding=0,
    conv_dilation=1,
    conv_groups=1,
    ln_eps=1e-05,
):
    xc, w = x.contiguous(), conv_weight.contiguous()
    N, C_in, H, W = xc.shape
    C_out, C_in_g, KH, KW = w.shape
    groups = conv_groups
    if C_in_g * groups != C_in or C_out % groups:
        raise ValueError(f"channels {C_in} -> {C_out} do not split into {groups} groups")
    (sh, sw), (ph, pw), (dh, dw) = _pair(conv_stride), _pair(conv_padding), _pair(conv_dilation)
    OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
    OW = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
    y = torch.empty((N, C_out, OH, OW), device=xc.device, dtype=torch.float32)
    P, C_out_g, K = N * OH * OW, C_out // groups, C_in_g * KH * KW
    if P == 0 or C_out == 0:
        return y

    def grid(meta):
        return (triton.cdiv(P, meta["BLOCK_M"]), triton.cdiv(C_out_g, meta["BLOCK_N"]), groups)

    _conv2d_kernel[grid](
        xc,
        w,
        conv_bias if conv_bias is not None else w,
        y,
        C_in,
        H,
        W,
        C_out,
        OH,
        OW,
        P,
        C_in_g,
        C_out_g,
        K,
        sh,
        sw,
        ph,
        pw,
        dh,
        dw,
        KH=KH,
        KW=KW,
        HAS_BIAS=conv_bias is not None,
    )
    HW = OH * OW
    M = C_out * HW  # values per sample
    BLOCK = 1024
    SPLIT = max(1, min(triton.cdiv(M, 8 * BLOCK), 64))  # chunks per sample
    CHUNK = triton.cdiv(M, SPLIT)
    SPLIT_P2 = triton.next_power_of_2(SPLIT)
    psum = torch.empty((N, SPLIT), device=xc.device, dtype=torch.float32)
    psq = torch.empty_like(psum)
    _chunk_sum_kernel[(N, SPLIT)](
        y, psum, psum, M, CHUNK, SPLIT, CENTERED=False, SPLIT_P2=SPLIT_P2, BLOCK=BLOCK
    )
    _chunk_sum_kernel[(N, SPLIT)](
        y, psum, psq, M, CHUNK, SPLIT, CENTERED=True, SPLIT_P2=SPLIT_P2, BLOCK=BLOCK
    )
    stats = torch.empty((N, 2), device=xc.device, dtype=torch.float32)
    _finalize_kernel[(N,)](psum, psq, stats, M, SPLIT, float(ln_eps), SPLIT_P2=SPLIT_P2)
    per_channel = weight.dim() == 1
    if not per_channel and tuple(weight.shape) != (C_out, OH, OW):
        raise ValueError(
            f"weight {tuple(weight.shape)} fits neither (C_out,) nor {(C_out, OH, OW)}"
        )
    total = y.numel()
    _norm_scale_silu_kernel[(triton.cdiv(total, BLOCK),)](
        y, stats, weight.contiguous(), total, M, HW, PER_CHANNEL=per_channel, BLOCK=BLOCK
    )
    return y
