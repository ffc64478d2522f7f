"""W8A8 layer norm in Triton: int8 rows with exact integer statistics, float epilogue.

A one-program kernel quantizes the weight per tensor and writes its dequantized values
wq * sw (G floats, reused by every row). The row kernel makes three passes over its row, in
BLOCK chunks: max |x| for the scale sx; then xq = clamp(rint(x / sx), -127, 127) and the exact
integer sums S1 = sum xq and S2 = sum xq^2 (int32: |S2| <= 127^2 * G); then, with
mean = S1 / G and var = (G*S2 - S1^2) / G^2 (numerator in int64, exact), it re-quantizes each
chunk and writes (xq - mean) * sx / sqrt(sx^2 var + eps) * (wq sw) + bias. rint (round half to
even) is the float32 trick (v + 1.5*2^23) - 1.5*2^23; divisions use div_rn, as IEEE division.
"""

import math

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

RINT_MAGIC = tl.constexpr(12582912.0)  # 1.5 * 2**23 (kernels may read only constexpr globals)


@triton.jit
def _quantize(v, s):
    q = tl.minimum(tl.maximum(libdevice.div_rn(v, s), -127.0), 127.0)
    return (q + RINT_MAGIC) - RINT_MAGIC  # round half to even, as a float holding an integer


@triton.jit
def _weight_kernel(w_ptr, wd_ptr, G, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    amax = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, G, BLOCK):
        amax = tl.maximum(amax, tl.abs(tl.load(w_ptr + i + offs, mask=i + offs < G, other=0.0)))
    s = libdevice.div_rn(tl.max(amax, axis=0), 127.0)
    s = tl.where(s == 0.0, 1.0, s)
    for i in range(0, G, BLOCK):
        mask = i + offs < G
        w = tl.load(w_ptr + i + offs, mask=mask, other=0.0)
        tl.store(wd_ptr + i + offs, _quantize(w, s) * s, mask=mask)  # dequantized int8 weight


@triton.jit
def _layernorm_w8a8_kernel(
    x_ptr,
    wd_ptr,
    b_ptr,
    y_ptr,
    G,
    eps,
    HAS_W: tl.constexpr,
    HAS_B: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * G
    y_ptr += row * G
    offs = tl.arange(0, BLOCK)
    amax = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, G, BLOCK):  # pass 1: the row's scale
        amax = tl.maximum(amax, tl.abs(tl.load(x_ptr + i + offs, mask=i + offs < G, other=0.0)))
    sx = libdevice.div_rn(tl.max(amax, axis=0), 127.0)
    sx = tl.where(sx == 0.0, 1.0, sx)  # an all-zero row quantizes with scale 1
    s1 = tl.zeros((BLOCK,), dtype=tl.int32)
    s2 = tl.zeros((BLOCK,), dtype=tl.int32)
    for i in range(0, G, BLOCK):  # pass 2: exact integer sums of xq and xq^2
        q = _quantize(tl.load(x_ptr + i + offs, mask=i + offs < G, other=0.0), sx).to(tl.int32)
        s1 += q
        s2 += q * q
    S1 = tl.sum(s1, axis=0).to(tl.int64)
    S2 = tl.sum(s2, axis=0).to(tl.int64)
    mean = S1.to(tl.float32) / G
    var = (G * S2 - S1 * S1).to(tl.float32) / (G * 1.0 * G)  # exact numerator, as specified
    rstd = 1.0 / tl.sqrt(sx * sx * var + eps)
    for i in range(0, G, BLOCK):  # pass 3: normalize the quantized row
        mask = i + offs < G
        q = _quantize(tl.load(x_ptr + i + offs, mask=mask, other=0.0), sx)
        y = (q - mean) * sx * rstd
        if HAS_W:
            y = y * tl.load(wd_ptr + i + offs, mask=mask, other=0.0)
        if HAS_B:
            y = y + tl.load(b_ptr + i + offs, mask=mask, other=0.0)
        tl.store(y_ptr + i + offs, y, mask=mask)


def layernorm_w8a8(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.dim() - len(shape) :]) != shape:
        raise ValueError(f"input {tuple(input.shape)} does not end in {shape}")
    G = math.prod(shape)
    x = input.contiguous()
    rows = x.numel() // G
    y = torch.empty_like(x)
    block = min(4096, triton.next_power_of_2(G))
    wd = torch.empty((G,), device=x.device, dtype=torch.float32)
    if weight is not None:
        _weight_kernel[(1,)](weight.contiguous(), wd, G, BLOCK=block)
    b = bias.contiguous() if bias is not None else wd  # any pointer when there is no bias
    _layernorm_w8a8_kernel[(rows,)](
        x, wd, b, y, G, float(eps), HAS_W=weight is not None, HAS_B=bias is not None, BLOCK=block
    )
    return y
