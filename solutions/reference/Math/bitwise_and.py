"""Bitwise AND in Triton, with broadcasting handled by strides inside the kernel.

Operands are expanded (a view) to the output shape and padded to 4 dimensions; a broadcast
dimension has stride 0. Bool tensors are viewed as uint8 (0/1), whose AND is the logical AND.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _and_kernel(
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
    x = tl.load(x_ptr + xo, mask=mask, other=0)
    if Y_SCALAR:
        y = (tl.zeros([BLOCK], tl.int64) + y_scalar).to(x.dtype)  # keep the low bits
    else:
        y = tl.load(y_ptr + yo, mask=mask, other=0)
    tl.store(o_ptr + offs, x & y, mask=mask)


def _strides4(t: torch.Tensor, shape: torch.Size) -> list[int]:
    strides = list(t.expand(shape).stride())
    return [0] * (4 - len(strides)) + strides


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.uint8) if t.dtype == torch.bool else t


def bitwise_and(input, other, out=None):
    y_scalar = not isinstance(other, torch.Tensor)
    dtype = torch.result_type(input, other)
    shape = input.shape if y_scalar else torch.broadcast_shapes(input.shape, other.shape)
    if len(shape) > 4:
        raise NotImplementedError("at most 4 dimensions")
    usable = out is not None and out.shape == shape and out.dtype == dtype and out.is_contiguous()
    o = out if usable else torch.empty(shape, dtype=dtype, device=input.device)
    x = _bits(input.to(dtype) if input.dtype != dtype else input)
    y = x if y_scalar else _bits(other.to(dtype) if other.dtype != dtype else other)
    contig = (
        x.shape == shape
        and x.is_contiguous()
        and (y_scalar or (y.shape == shape and y.is_contiguous()))
    )
    n = o.numel()
    dims = [1] * (4 - len(shape)) + list(shape)
    if n:
        BLOCK = 1024
        _and_kernel[(triton.cdiv(n, BLOCK),)](
            x,
            y,
            _bits(o),
            int(other) if y_scalar else 0,
            n,
            dims[1],
            dims[2],
            dims[3],
            *_strides4(x, shape),
            *_strides4(y, shape),
            CONTIG=contig,
            Y_SCALAR=y_scalar,
            BLOCK=BLOCK,
        )
    if out is not None and not usable:
        out.resize_(shape)
        out.copy_(o)
        return out
    return o
