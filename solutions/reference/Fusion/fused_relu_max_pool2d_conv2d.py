"""conv2d -> max_pool2d -> ReLU in two Triton kernels.

1. An implicit-GEMM convolution: per group, rows are output pixels (n, oh, ow), columns the
   group's output channels, the contraction runs over C_in/groups * kH * kW. Each program
   gathers a BLOCK_M x BLOCK_K slice of the im2col matrix straight from the NCHW input (masks do
   the zero padding), multiplies it by the matching slice of the (C_out, K) weight in full fp32
   (input_precision="ieee", no TF32), adds the bias and stores the conv output.
2. Max pooling + ReLU: each program takes BLOCK pooled outputs, scans their (dilated) windows
   with the pooling padding read as -inf, and stores max(window max, 0). Windows never straddle
   programs, so nothing needs to be exchanged between them.
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
def _max_pool_relu_kernel(
    y_ptr,
    o_ptr,
    total,
    H,
    W,
    PH,
    PW,
    stride_h,
    stride_w,
    pad_h,
    pad_w,
    dil_h,
    dil_w,
    KH: tl.constexpr,
    KW: tl.constexpr,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    pw = offs % PW
    ph = (offs // PW) % PH
    plane = offs // (PW * PH)  # (n, c)
    h0 = ph * stride_h - pad_h
    w0 = pw * stride_w - pad_w
    best = tl.full((BLOCK,), float("-inf"), tl.float32)
    for i in tl.static_range(KH):
        h = h0 + i * dil_h
        for j in tl.static_range(KW):
            w = w0 + j * dil_w
            ok = mask & (h >= 0) & (h < H) & (w >= 0) & (w < W)  # padding reads as -inf
            v = tl.load(y_ptr + plane * H * W + h * W + w, mask=ok, other=float("-inf"))
            best = tl.maximum(best, v)
    tl.store(o_ptr + offs, tl.maximum(best, 0.0), mask=mask)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _pool_len(n, k, s, p, d, ceil_mode):
    span = n + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= n + p:  # the last window must start inside
        out -= 1
    return out


def fused_relu_max_pool2d_conv2d(
    input,
    weight,
    bias=None,
    conv_stride=1,
    conv_padding=0,
    conv_dilation=1,
    conv_groups=1,
    pool_kernel_size=2,
    pool_stride=None,
    pool_padding=0,
    pool_dilation=1,
    pool_ceil_mode=False,
    inplace=False,
):
    x, w = input.contiguous(), weight.contiguous()
    N, C_in, H, W = x.shape
    C_out, C_in_g, KH, KW = w.shape
    groups = conv_groups
    if C_in_g * groups != C_in or C_out % groups:
        raise ValueError(f"channels {C_in} -> {C_out} do not split into {groups} groups")
    (sh, sw), (ph, pw), (dh, dw) = _pair(conv_stride), _pair(conv_padding), _pair(conv_dilation)
    OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
    OW = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
    y = torch.empty((N, C_out, OH, OW), device=x.device, dtype=torch.float32)
    P, C_out_g, K = N * OH * OW, C_out // groups, C_in_g * KH * KW
    if P and C_out:

        def grid(meta):
            return (triton.cdiv(P, meta["BLOCK_M"]), triton.cdiv(C_out_g, meta["BLOCK_N"]), groups)

        _conv2d_kernel[grid](
            x,
            w,
            bias if bias is not None else w,
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
            HAS_BIAS=bias is not None,
        )
    (pkh, pkw) = _pair(pool_kernel_size)
    (psh, psw) = _pair(pool_stride) if pool_stride is not None else (pkh, pkw)
    (pph, ppw), (pdh, pdw) = _pair(pool_padding), _pair(pool_dilation)
    PH = _pool_len(OH, pkh, psh, pph, pdh, pool_ceil_mode)
    PW = _pool_len(OW, pkw, psw, ppw, pdw, pool_ceil_mode)
    out = torch.empty((N, C_out, PH, PW), device=x.device, dtype=torch.float32)
    total = out.numel()
    if total:
        BLOCK = 512
        _max_pool_relu_kernel[(triton.cdiv(total, BLOCK),)](
            y,
            out,
            total,
            OH,
            OW,
            PH,
            PW,
            psh,
            psw,
            pph,
            ppw,
            pdh,
            pdw,
            KH=pkh,
            KW=pkw,
            BLOCK=BLOCK,
        )
    return out
