"""torch.div in Triton: true, truncating and flooring division with broadcasting.

Operands are expanded (a view) to the output shape and padded to 4 dimensions; a broadcast
dimension has stride 0. Floats use correctly rounded division (div_rn). Floor mode reproduces
torch's div_floor (Python's float //) step by step rather than floor(a / b), which differs when
a / b rounds up onto a whole number (1 // 0.1 is 9). Integer modes use C truncating division
with a correction toward -inf for 'floor'.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

MODES = {None: 0, "trunc": 1, "floor": 2}


@triton.jit
def _float_div(a, b, MODE: tl.constexpr):
    q = tl.math.div_rn(a, b)  # IEEE division: +-inf and NaN on division by zero
    if MODE == 1:
        q = libdevice.trunc(q)  # keeps the sign of zero: trunc(-0.3) = -0.0
    elif MODE == 2:
        mod = a % b  # fmod: the sign of a
        d = tl.math.div_rn(a - mod, b)
        d = tl.where((mod != 0) & ((b < 0) != (mod < 0)), d - 1.0, d)
        f = tl.floor(d)
        f = tl.where(d - f > 0.5, f + 1.0, f)
        sign = q.to(tl.uint32, bitcast=True) & 0x80000000
        signed_zero = sign.to(tl.float32, bitcast=True)  # copysign(0, a / b)
        f = tl.where(d == 0, signed_zero, f)
        q = tl.where(b == 0, q, f)  # division by zero: the IEEE quotient
    return q


@triton.jit
def _div_kernel(
    x_ptr,
    y_ptr,
    o_ptr,
    y_scalar,
    n,
    d1,
    d2,
    d3,
    sx0,
    sx1,
    sx2,
    sx3,
    sy0,
    sy1,
    sy2,
    sy3,
    MODE: tl.constexpr,
    IS_INT: tl.constexpr,
    CONTIG: tl.constexpr,
    Y_SCALAR: tl.constexpr,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if CONTIG:
        xo = offs
        yo = offs
    else:  # flat index -> 4-D coordinates -> strided offsets
        i3 = offs % d3
        r = offs // d3
        i2 = r % d2
        r = r // d2
        i1 = r % d1
        i0 = r // d1
        xo = i0 * sx0 + i1 * sx1 + i2 * sx2 + i3 * sx3
        yo = i0 * sy0 + i1 * sy1 + i2 * sy2 + i3 * sy3
    a = tl.load(x_ptr + xo, mask=mask, other=1)
    if Y_SCALAR:
        b = (tl.zeros([BLOCK], a.dtype) + y_scalar).to(a.dtype)
    else:
        b = tl.load(y_ptr + yo, mask=mask, other=1).to(a.dtype)
    if IS_INT and MODE != 0:
        q = a // b  # C division: rounds toward zero
        if MODE == 2:
            q = tl.where(((a % b) != 0) & ((a < 0) != (b < 0)), q - 1, q)
    else:
        q = _float_div(a.to(tl.float32), b.to(tl.float32), MODE)
    tl.store(o_ptr + offs, q.to(o_ptr.dtype.element_ty), mask=mask)


def _strides4(t: torch.Tensor, shape: torch.Size) -> list[int]:
    strides = list(t.expand(shape).stride())
    return [0] * (4 - len(strides)) + strides


def div(input, other, rounding_mode=None, out=None):
    if rounding_mode not in MODES:
        raise ValueError(f"rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
    y_scalar = not isinstance(other, torch.Tensor)
    common = torch.result_type(input, other)
    is_int = not common.is_floating_point
    dtype = torch.get_default_dtype() if is_int and rounding_mode is None else common
    shape = input.shape if y_scalar else torch.broadcast_shapes(input.shape, other.shape)
    if len(shape) > 4:
        raise NotImplementedError("at most 4 dimensions")
    usable = out is not None and out.shape == shape and out.dtype == dtype and out.is_contiguous()
    o = out if usable else torch.empty(shape, dtype=dtype, device=input.device)
    x = input if input.dtype == common else input.to(common)
    y = x if y_scalar else (other if other.dtype == common else other.to(common))
    contig = (
        x.shape == shape
        and x.is_contiguous()
        and (y_scalar or (y.shape == shape and y.is_contiguous()))
    )
    value = (int(other) if is_int else float(other)) if y_scalar else 0
    n = o.numel()
    dims = [1] * (4 - len(shape)) + list(shape)
    if n:
        BLOCK = 1024
        _div_kernel[(triton.cdiv(n, BLOCK),)](
            x,
            y,
            o,
            value,
            n,
            dims[1],
            dims[2],
            dims[3],
            *_strides4(x, shape),
            *_strides4(y, shape),
            MODE=MODES[rounding_mode],
            IS_INT=is_int,
            CONTIG=contig,
            Y_SCALAR=y_scalar,
            BLOCK=BLOCK,
        )
    if out is not None and not usable:
        out.resize_(shape)
        out.copy_(o)
        return out
    return o
