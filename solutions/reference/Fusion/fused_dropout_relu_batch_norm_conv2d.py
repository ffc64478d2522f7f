"""conv2d -> batch norm (batch statistics) -> ReLU -> dropout in three Triton kernels.

1. An implicit-GEMM convolution (rows = output pixels, columns = a group's output channels,
   contraction over C_in/groups * kH * kW gathered straight from the NCHW input; full fp32
   "ieee" dots, no TF32) writes Y into the output buffer.
2. Batch statistics need every pixel of a channel, which no conv tile sees: one program per
   channel sweeps its N slabs of OH*OW values twice (mean, then the mean of squared
   deviations: a two-pass variance) and stores mean and 1/sqrt(var + eps).
3. An element-wise pass normalises, applies ReLU and the dropout mask tl.rand(seed, flat index)
   >= p (Philox: a pure function of seed and index), and overwrites Y in place. The seed is drawn
   from torch's default generator, so torch.manual_seed fixes the mask.
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
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # output pixels (n * OH + oh) * OW + ow
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
        ci = offs_k // (KH * KW)  # k = (ci * KH + kh) * KW + kw, the weight's own layout
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
    y_ptrs = y_ptr + n[:, None] * C_out * OH * OW + co[None, :] * OH * OW + ohw[:, None]
    tl.store(y_ptrs, acc, mask=m_ok[:, None] & n_ok[None, :])


@triton.jit
def _channel_stats_kernel(y_ptr, stats_ptr, N, C, HW, eps, BLOCK: tl.constexpr):
    c = tl.program_id(0)
    offs0 = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for n in range(0, N):
        base = (n * C + c).to(tl.int64) * HW  # the channel's slab in image n
        for s in range(0, HW, BLOCK):
            offs = s + offs0
            acc += tl.load(y_ptr + base + offs, mask=offs < HW, other=0.0)
    count = N * HW
    mean = tl.sum(acc, axis=0) / count
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for n in range(0, N):
        base = (n * C + c).to(tl.int64) * HW
        for s in range(0, HW, BLOCK):
            offs = s + offs0
            v = tl.load(y_ptr + base + offs, mask=offs < HW, other=0.0)
            d = tl.where(offs < HW, v - mean, 0.0)
            acc += d * d
    var = tl.sum(acc, axis=0) / count  # biased, as batch norm normalises with
    tl.store(stats_ptr + 2 * c, mean)
    tl.store(stats_ptr + 2 * c + 1, 1.0 / tl.sqrt(var + eps))


@triton.jit
def _bn_relu_dropout_kernel(
    y_ptr, stats_ptr, total, C, HW, p, seed, TRAINING: tl.constexpr, BLOCK: tl.constexpr
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    c = (offs // HW) % C
    mean = tl.load(stats_ptr + 2 * c, mask=mask, other=0.0)
    rstd = tl.load(stats_ptr + 2 * c + 1, mask=mask, other=0.0)
    v = tl.load(y_ptr + offs, mask=mask, other=0.0)
    r = tl.maximum((v - mean) * rstd, 0.0)
    if TRAINING:
        keep = tl.rand(seed, offs) >= p  # uniform in [0, 1): dropped with probability p
        r = tl.where(keep, r * (1.0 / (1.0 - p)), 0.0)
    tl.store(y_ptr + offs, r, mask=mask)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def fused_dropout_relu_batch_norm_conv2d(
    input,
    weight,
    bias=None,
    stride=1,
    padding=0,
    dilation=1,
    groups=1,
    p=0.5,
    training=True,
    inplace=False,
):
    x, w = input.contiguous(), weight.contiguous()
    N, C_in, H, W = x.shape
    C_out, C_in_g, KH, KW = w.shape
    if C_in_g * groups != C_in or C_out % groups:
        raise ValueError(f"channels {C_in} -> {C_out} do not split into {groups} groups")
    (sh, sw), (dh, dw), (ph, pw) = _pair(stride), _pair(dilation), _pair(padding)
    OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
    OW = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
    y = torch.empty((N, C_out, OH, OW), device=x.device, dtype=torch.float32)
    # The dropout seed comes from torch's default generator: torch.manual_seed fixes the mask.
    seed = int(torch.randint(0, 2**31 - 1, (1,))) if training else 0
    P, C_out_g, K = N * OH * OW, C_out // groups, C_in_g * KH * KW
    if P == 0 or C_out == 0:
        return y

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
    stats = torch.empty((C_out, 2), device=x.device, dtype=torch.float32)
    HW = OH * OW
    _channel_stats_kernel[(C_out,)](
        y, stats, N, C_out, HW, 1e-5, BLOCK=min(triton.next_power_of_2(HW), 1024)
    )
    total = y.numel()
    BLOCK = 1024
    _bn_relu_dropout_kernel[(triton.cdiv(total, BLOCK),)](
        y, stats, total, C_out, HW, float(p), seed, TRAINING=bool(training) and p > 0, BLOCK=BLOCK
    )
    return y
