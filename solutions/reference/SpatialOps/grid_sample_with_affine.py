"""affine_grid + grid_sample fused in Triton: the sampling grid is never materialized.

One program handles BLOCK_P output points of one image: it builds each point's normalized
coordinates from theta (theta @ (x_w, y_h, 1), with affine_grid's base coordinates), then
samples exactly like grid_sample and loops over the channels, so the coordinate arithmetic is
done once per point. Sampling is separable: along each axis a point has T taps (2 bilinear,
1 nearest, 4 bicubic), each with an integer index, an in-bounds flag and a weight, held as
[BLOCK_P, T] tiles; the T x T neighbourhood is one masked [BLOCK_P, T, T] gather per channel.
For bilinear/nearest the padding rule applies to the sample coordinate, for bicubic to every
tap's integer coordinate, as in PyTorch.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
PADS = {"zeros": 0, "border": 1, "reflection": 2}


@triton.jit
def _unnormalize(g, size, ALIGN: tl.constexpr):
    if ALIGN:
        return (g + 1.0) / 2.0 * (size - 1)  # -1 and 1 are the centres of the edge pixels
    else:
        return ((g + 1.0) * size - 1.0) / 2.0  # -1 and 1 are the outer edges


@triton.jit
def _pad_coord(c, size, PAD: tl.constexpr, ALIGN: tl.constexpr):
    """Apply the border/reflection rule to a (float) coordinate; zeros padding leaves it."""
    if PAD == 2:  # reflect about the edge centres (align) or the outer edges, then clamp
        if ALIGN:
            lo2 = 0.0
            hi2 = 2.0 * (size - 1)
        else:
            lo2 = -1.0
            hi2 = 2.0 * size - 1.0
        mn = lo2 / 2.0
        span = (hi2 - lo2) / 2.0
        d = tl.abs(c - mn)
        flips = tl.floor(d / span)
        extra = d - flips * span  # fmod(d, span) for d >= 0
        odd = (flips - 2.0 * tl.floor(flips / 2.0)) == 1.0
        c = tl.where(odd, span - extra + mn, extra + mn)
        c = tl.where(span > 0, c, 0.0)  # a size-1 axis reflects onto its only pixel
    if PAD >= 1:
        c = tl.minimum(tl.maximum(c, 0.0), size - 1.0)
    return c


@triton.jit
def _cubic_weight(t, k):
    """Cubic-convolution weight (A = -0.75) of tap k in 0..3 for fractional position t."""
    A: tl.constexpr = -0.75
    x = tl.where(k == 0, t + 1.0, tl.where(k == 1, t, tl.where(k == 2, 1.0 - t, 2.0 - t)))
    near = ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0  # |x| <= 1
    far = ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A  # 1 < |x| < 2
    return tl.where((k == 1) | (k == 2), near, far)


@triton.jit
def _axis_taps(
    g, size, MODE: tl.constexpr, PAD: tl.constexpr, ALIGN: tl.constexpr, T: tl.constexpr
):
    """Taps along one axis for coordinates g [BLOCK_P]: index, in-bounds, weight [BLOCK_P, T]."""
    k = tl.arange(0, T)[None, :]
    if MODE == 0:  # bilinear: floor and floor + 1 of the padded coordinate
        c = _pad_coord(_unnormalize(g, size, ALIGN), size, PAD, ALIGN)
        c0 = tl.floor(c)
        pos = c0[:, None] + k
        w = tl.where(k == 0, (c0 + 1.0 - c)[:, None], (c - c0)[:, None])
    elif MODE == 1:  # nearest: round half to even, as nearbyint
        c = _pad_coord(_unnormalize(g, size, ALIGN), size, PAD, ALIGN)
        pos = libdevice.rint(c)[:, None] + k
        w = tl.full(pos.shape, 1.0, tl.float32)
    else:  # bicubic: taps floor-1 .. floor+2 of the raw coordinate, each padded
        c = _unnormalize(g, size, ALIGN)
        c0 = tl.floor(c)
        w = _cubic_weight((c - c0)[:, None], k)
        pos = _pad_coord(c0[:, None] - 1.0 + k, size, PAD, ALIGN)
    ok = (pos >= 0.0) & (pos <= size - 1.0)  # only zeros padding can leave the image
    idx = tl.where(ok, pos, 0.0).to(tl.int32)
    return idx, ok, w


@triton.jit
def _base_coord(i, size, ALIGN: tl.constexpr):
    """affine_grid's normalized coordinate of output index i along an axis of `size` points."""
    i = i.to(tl.float32)
    if ALIGN:  # -1 .. 1 through the end points (a single point sits at -1)
        return tl.where(size > 1, -1.0 + 2.0 * i / tl.maximum(size - 1, 1), -1.0)
    else:  # pixel centres of an image spanning -1 .. 1
        return (2.0 * i + 1.0 - size) / size


@triton.jit
def _affine_sample_kernel(
    x_ptr,
    t_ptr,
    y_ptr,
    C,
    H,
    W,
    Ho,
    Wo,
    MODE: tl.constexpr,
    PAD: tl.constexpr,
    ALIGN: tl.constexpr,
    T: tl.constexpr,
    BLOCK_P: tl.constexpr,
):
    n = tl.program_id(1).to(tl.int64)
    P = Ho * Wo
    p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)  # output point (h_out * Wo + w_out)
    p_ok = p < P
    xs = _base_coord(p % Wo, Wo, ALIGN)
    ys = _base_coord(p // Wo, Ho, ALIGN)
    t = t_ptr + n * 6  # theta[n], row-major 2 x 3
    gx = tl.load(t) * xs + tl.load(t + 1) * ys + tl.load(t + 2)
    gy = tl.load(t + 3) * xs + tl.load(t + 4) * ys + tl.load(t + 5)
    ix, okx, wx = _axis_taps(gx, W, MODE, PAD, ALIGN, T)
    iy, oky, wy = _axis_taps(gy, H, MODE, PAD, ALIGN, T)
    off = iy[:, :, None] * W + ix[:, None, :]  # [BLOCK_P, T (rows), T (cols)]
    ok = p_ok[:, None, None] & oky[:, :, None] & okx[:, None, :]
    for c in range(C):
        plane = x_ptr + (n * C + c) * H * W
        v = tl.load(plane + off, mask=ok, other=0.0)
        rows = tl.sum(v * wx[:, None, :], axis=2)  # interpolate along x, then along y
        out = tl.sum(rows * wy, axis=1)
        tl.store(y_ptr + (n * C + c) * P + p, out, mask=p_ok)


def grid_sample_with_affine(
    input, theta, size, mode="bilinear", padding_mode="zeros", align_corners=False
):
    if input.dim() != 4 or len(size) != 4:
        raise NotImplementedError("only 4-D (N, C, H, W) inputs and sizes are supported")
    x, th = input.contiguous(), theta.contiguous()
    N, C, H, W = x.shape
    _, _, Ho, Wo = (int(s) for s in size)
    y = torch.empty((N, C, Ho, Wo), device=x.device, dtype=x.dtype)
    T = {"bilinear": 2, "nearest": 1, "bicubic": 4}[mode]
    BLOCK_P = 128
    _affine_sample_kernel[(triton.cdiv(Ho * Wo, BLOCK_P), N)](
        x,
        th,
        y,
        C,
        H,
        W,
        Ho,
        Wo,
        MODE=MODES[mode],
        PAD=PADS[padding_mode],
        ALIGN=bool(align_corners),
        T=T,
        BLOCK_P=BLOCK_P,
    )
    return y
