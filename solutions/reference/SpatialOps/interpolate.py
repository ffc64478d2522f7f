"""Nearest and bilinear resizing of NCHW tensors in Triton, bit-compatible with torch's indexing.

The wrapper computes the per-axis float32 scale the way torch does (1 / scale_factor when a
scale factor is given, in / out otherwise, (in - 1) / (out - 1) for align_corners=True); the
kernel maps every output pixel to its source coordinate in float32 with the same formulas, so
nearest picks exactly torch's source pixel and bilinear uses the same neighbours and weights.
"""

import math
import struct

import torch
import triton
import triton.language as tl


def _f32(v: float) -> float:
    """Round a Python float to the nearest float32 (what a C++ static_cast<float> does)."""
    return struct.unpack("f", struct.pack("f", v))[0]


@triton.jit
def _interp_kernel(
    x_ptr,
    y_ptr,
    H,
    W,
    OH,
    OW,
    scale_h,
    scale_w,
    BILINEAR: tl.constexpr,
    ALIGN: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0)  # one output row (plane, oh) per program along axis 0
    oh = row % OH
    plane = (row // OH).to(tl.int64)  # n * C + c
    ow = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = ow < OW
    src = x_ptr + plane * H * W
    dst = y_ptr + row.to(tl.int64) * OW
    if BILINEAR:
        if ALIGN:
            hr = scale_h * oh.to(tl.float32)
            wr = scale_w * ow.to(tl.float32)
        else:  # half-pixel centres, clamped at 0
            hr = tl.maximum(scale_h * (oh.to(tl.float32) + 0.5) - 0.5, 0.0)
            wr = tl.maximum(scale_w * (ow.to(tl.float32) + 0.5) - 0.5, 0.0)
        h0 = hr.to(tl.int32)  # coordinates are >= 0: truncation is floor
        w0 = wr.to(tl.int32)
        h1 = tl.where(h0 < H - 1, h0 + 1, h0)
        w1 = tl.where(w0 < W - 1, w0 + 1, w0)
        lh = hr - h0.to(tl.float32)
        lw = wr - w0.to(tl.float32)
        top = src + h0 * W
        bot = src + h1 * W
        x00 = tl.load(top + w0, mask=mask, other=0.0).to(tl.float32)
        x01 = tl.load(top + w1, mask=mask, other=0.0).to(tl.float32)
        x10 = tl.load(bot + w0, mask=mask, other=0.0).to(tl.float32)
        x11 = tl.load(bot + w1, mask=mask, other=0.0).to(tl.float32)
        y = (1.0 - lh) * ((1.0 - lw) * x00 + lw * x01) + lh * ((1.0 - lw) * x10 + lw * x11)
    else:
        # floor(dst * scale) in float32, clamped; an axis whose size is unchanged is copied
        ih = tl.minimum((oh.to(tl.float32) * scale_h).to(tl.int32), H - 1)
        iw = tl.minimum((ow.to(tl.float32) * scale_w).to(tl.int32), W - 1)
        ih = tl.where(OH == H, oh, ih)
        iw = tl.where(OW == W, ow, iw)
        y = tl.load(src + ih * W + iw, mask=mask, other=0.0)
    tl.store(dst + ow, y.to(y_ptr.dtype.element_ty), mask=mask)


def _pair(v):
    return (v, v) if not isinstance(v, (tuple, list)) else tuple(v)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    if input.dim() != 4:
        raise NotImplementedError("interpolate: only 4-D NCHW input is supported")
    if mode not in ("nearest", "bilinear"):
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported")
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    x = input.contiguous()
    N, C, H, W = x.shape
    if size is not None:
        OH, OW = (int(s) for s in _pair(size))
        sfs = (None, None)
    else:
        sfs = tuple(float(s) for s in _pair(scale_factor))
        OH, OW = math.floor(H * sfs[0]), math.floor(W * sfs[1])
    align = bool(align_corners) if mode == "bilinear" else False

    def scale(n_in, n_out, sf):
        if align:
            return _f32(_f32(n_in - 1) / _f32(n_out - 1)) if n_out > 1 else 0.0
        if sf is not None and sf > 0:
            return _f32(1.0 / sf)  # torch's default with a scale factor: 1 / scale_factor
        return _f32(_f32(n_in) / _f32(n_out))

    bilinear = mode == "bilinear" and not (OH == H and OW == W)  # same size: a plain copy
    y = torch.empty((N, C, OH, OW), dtype=x.dtype, device=x.device)
    if y.numel() == 0:
        return y
    BLOCK = min(1024, triton.next_power_of_2(OW))
    _interp_kernel[(N * C * OH, triton.cdiv(OW, BLOCK))](
        x,
        y,
        H,
        W,
        OH,
        OW,
        scale(H, OH, sfs[0]),
        scale(W, OW, sfs[1]),
        BILINEAR=bilinear,
        ALIGN=align,
        BLOCK=BLOCK,
    )
    return y
