"""2-D transposed convolution in Triton as a phase-decomposed implicit GEMM.

Output pixel (oh, ow) receives x[ih, iw] * w[kh, kw] whenever oh = ih*s - p + kh*d (and the same
for columns), i.e. when (oh + p - kh*d) is divisible by the stride s. All output pixels with the
same residues (oh mod s, ow mod s) - one "phase" - use the same set of kernel taps, so each
program works on one phase of one group: for each valid tap (kh, kw), a scalar test per program,
it multiplies a gathered BLOCK_M x BLOCK_K tile of input pixels (masked at the image border) by
a BLOCK_K x BLOCK_N slice of the weight, accumulating over the group's input channels. No work
is spent on the (s^2 - 1)/s^2 of tap/pixel pairs that a naive gather would mask away. The dots
run in full fp32 ("ieee"), not TF32.
"""

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[  # the first config is also the one used by the CPU interpreter
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 16}, num_stages=3, num_warps=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32}, num_stages=3, num_warps=8),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}, num_stages=3, num_warps=8),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_stages=4, num_warps=4),
    ],
    key=["P", "C_out_g", "C_in_g"],
)
@triton.jit
def _conv_t2d_kernel(
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
    OHp,
    OWp,
    P,
    C_in_g,
    C_out_g,
    s_h,
    s_w,
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
    pid_gp = tl.program_id(2)
    g = pid_gp // (s_h * s_w)  # group
    phase = pid_gp % (s_h * s_w)
    rh = phase // s_w  # this program's output residues: oh = rh + i*s_h, ow = rw + j*s_w
    rw = phase % s_w

    # Rows: output pixels of this phase, m = (n * OHp + i) * OWp + j.
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    n = (offs_m // (OHp * OWp)).to(tl.int64)
    i = (offs_m // OWp) % OHp
    j = offs_m % OWp
    oh = rh + i * s_h
    ow = rw + j * s_w
    m_ok = (offs_m < P) & (oh < OH) & (ow < OW)
    x_base = x_ptr + n * C_in * H * W + g * C_in_g * H * W

    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = offs_n < C_out_g
    KK: tl.constexpr = KH * KW

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kh in range(KH):
        th = rh + pad_h - kh * dil_h  # oh + pad - kh*dil = i*s_h + th
        if th % s_h == 0:  # the tap row hits this phase (divisibility: same for either sign rule)
            ih = i + th // s_h  # exact division
            for kw in range(KW):
                tw = rw + pad_w - kw * dil_w
                if tw % s_w == 0:
                    iw = j + tw // s_w
                    pix_ok = m_ok & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                    pix = ih * W + iw
                    for c0 in range(0, C_in_g, BLOCK_K):
                        ci = c0 + tl.arange(0, BLOCK_K)
                        c_ok = ci < C_in_g
                        a = tl.load(
                            x_base[:, None] + ci[None, :] * H * W + pix[:, None],
                            mask=pix_ok[:, None] & c_ok[None, :],
                            other=0.0,
                        )
                        # weight[g*C_in_g + ci, co, kh, kw], layout (C_in, C_out_g, KH, KW)
                        w_off = (g * C_in_g + ci)[:, None] * (C_out_g * KK) + offs_n[None, :] * KK
                        b = tl.load(
                            w_ptr + w_off + kh * KW + kw,
                            mask=c_ok[:, None] & n_ok[None, :],
                            other=0.0,
                        )
                        acc = tl.dot(a, b, acc, input_precision="ieee")  # fp32, no TF32

    co = g * C_out_g + offs_n
    if HAS_BIAS:
        acc += tl.load(b_ptr + co, mask=n_ok, other=0.0)[None, :]
    y_ptrs = y_ptr + n[:, None] * C_out * OH * OW + co[None, :] * OH * OW + (oh * OW + ow)[:, None]
    tl.store(y_ptrs, acc, mask=m_ok[:, None] & n_ok[None, :])


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    x, w = input.contiguous(), weight.contiguous()
    N, C_in, H, W = x.shape
    C_in_w, C_out_g, KH, KW = w.shape
    if C_in_w != C_in or C_in % groups:
        raise ValueError(f"weight {tuple(w.shape)} does not fit {C_in} channels in {groups} groups")
    (sh, sw), (ph, pw) = _pair(stride), _pair(padding)
    (oph, opw), (dh, dw) = _pair(output_padding), _pair(dilation)
    OH = (H - 1) * sh - 2 * ph + dh * (KH - 1) + oph + 1
    OW = (W - 1) * sw - 2 * pw + dw * (KW - 1) + opw + 1
    C_out = C_out_g * groups
    y = torch.empty((N, C_out, OH, OW), device=x.device, dtype=x.dtype)
    OHp, OWp = triton.cdiv(OH, sh), triton.cdiv(OW, sw)  # pixels per phase (upper bound)
    P = N * OHp * OWp
    b = bias.contiguous() if bias is not None else w  # any pointer: unused without bias

    def grid(meta):
        return (
            triton.cdiv(P, meta["BLOCK_M"]),
            triton.cdiv(C_out_g, meta["BLOCK_N"]),
            groups * sh * sw,
        )

    _conv_t2d_kernel[grid](
        x,
        w,
        b,
        y,
        C_in,
        H,
        W,
        C_out,
        OH,
        OW,
        OHp,
        OWp,
        P,
        C_in // groups,
        C_out_g,
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
    return y
