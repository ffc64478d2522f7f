"""conv2d + leaky ReLU in Triton: an implicit-GEMM convolution with the activation in its epilogue.

Per group the convolution is a matrix product: rows are output pixels (n, oh, ow), columns the
group's output channels, and the contraction runs over K = C_in/groups * kH * kW. Each program
gathers a BLOCK_M x BLOCK_K slice of the im2col matrix (never materialised) straight from the
NCHW input, with masks doing the zero padding, and multiplies it with a BLOCK_K x BLOCK_N slice
of the (C_out, K) row-major weight in full fp32 ("ieee": no TF32). The epilogue adds the bias,
applies leaky ReLU in registers and stores the NCHW tile.
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
def _conv2d_leaky_relu_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr,
    C_in, H, W, C_out, OH, OW, P, C_in_g, C_out_g, K,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, slope,
    KH: tl.constexpr, KW: tl.constexpr, HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    g = tl.program_id(2)  # group

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # output pixel (n * OH + oh) * OW + ow
    m_ok = offs_m < P
    n = (offs_m // (OH * OW)).to(tl.int64)
    ohw = offs_m % (OH * OW)
    ih0 = (ohw // OW) * stride_h - pad_h  # top-left input position of each pixel's window
    iw0 = (ohw % OW) * stride_w - pad_w
    x_base = x_ptr + n * C_in * H * W + g * C_in_g * H * W

    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = offs_n < C_out_g
    co = g * C_out_g + offs_n

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        k_ok = offs_k < K
        ci = offs_k // (KH * KW)  # k = (ci * KH + kh) * KW + kw: the weight's own layout
        kh = (offs_k // KW) % KH
        kw = offs_k % KW
        ih = ih0[:, None] + kh[None, :] * dil_h
        iw = iw0[:, None] + kw[None, :] * dil_w
        a_ok = m_ok[:, None] & k_ok[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        a = tl.load(x_base[:, None] + ci[None, :] * H * W + ih * W + iw, mask=a_ok, other=0.0)
        b = tl.load(
            w_ptr + co[None, :] * K + offs_k[:, None], mask=n_ok[None, :] & k_ok[:, None], other=0.0
        )
        acc = tl.dot(a, b, acc, input_precision="ieee")  # full fp32 products, no TF32

    if HAS_BIAS:
        acc += tl.load(b_ptr + co, mask=n_ok, other=0.0)[None, :]
    y = tl.where(acc >= 0, acc, acc * slope)
    y_ptrs = y_ptr + n[:, None] * C_out * OH * OW + co[None, :] * OH * OW + ohw[:, None]
    tl.store(y_ptrs, y, mask=m_ok[:, None] & n_ok[None, :])


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _geometry(padding, H, W, KH, KW, sh, sw, dh, dw):
    """(pad_h, pad_w, OH, OW); 'same' puts any odd extra padding on the bottom/right."""
    if padding == "valid":
        padding = 0
    if padding == "same":
        return dh * (KH - 1) // 2, dw * (KW - 1) // 2, H, W
    ph, pw = _pair(padding)
    OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
    OW = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
    return ph, pw, OH, OW


def fused_leaky_relu_conv2d(
    input,
    weight,
    bias=None,
    stride=1,
    padding=0,
    dilation=1,
    groups=1,
    negative_slope=0.01,
    inplace=False,
):
    # `inplace` would only let the activation overwrite the convolution's output, which is
    # never materialised here.
    x, w = input.contiguous(), weight.contiguous()
    N, C_in, H, W = x.shape
    C_out, C_in_g, KH, KW = w.shape
    if C_in_g * groups != C_in or C_out % groups:
        raise ValueError(f"channels {C_in} -> {C_out} do not split into {groups} groups")
    (sh, sw), (dh, dw) = _pair(stride), _pair(dilation)
    ph, pw, OH, OW = _geometry(padding, H, W, KH, KW, sh, sw, dh, dw)
    y = torch.empty((N, C_out, OH, OW), device=x.device, dtype=torch.float32)
    P, C_out_g, K = N * OH * OW, C_out // groups, C_in_g * KH * KW

    def grid(meta):
        return (triton.cdiv(P, meta["BLOCK_M"]), triton.cdiv(C_out_g, meta["BLOCK_N"]), groups)

    if P and C_out:
        _conv2d_leaky_relu_kernel[grid](
            x, w, bias if bias is not None else w, y,
            C_in, H, W, C_out, OH, OW, P, C_in_g, C_out_g, K, sh, sw, ph, pw, dh, dw,
            float(negative_slope), KH=KH, KW=KW, HAS_BIAS=bias is not None,
        )  # fmt: skip
    return y
