"""input + alpha * other in Triton, with broadcasting handled by strides inside the kernel.

Both operands are expanded (a view, no copy) to the output shape and padded to 4 dimensions; a
broadcast dimension has stride 0, so the kernel turns each flat output index into 4 coordinates
and gathers from either operand through its own strides. When both operands are already
contiguous with the output's shape, a fast path indexes them directly.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(
    x_ptr,
    y_ptr,
    o_ptr,
    y_scalar,
    alpha,
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
    else:  # flat index -> 4-D coordinates -> strided offsets (stride 0 on broadcast dims)
        i3 = offs % d3
        r = offs // d3
        i2 = r % d2
        r = r // d2
        i1 = r % d1
        i0 = r // d1
        xo = i0 * sx0 + i1 * sx1 + i2 * sx2 + i3 * sx3
        yo = i0 * sy0 + i1 * sy1 + i2 * sy2 + i3 * sy3
    out_ty = o_ptr.dtype.element_ty
    x = tl.load(x_ptr + xo, mask=mask, other=0).to(out_ty)
    if Y_SCALAR:
        y = tl.zeros([BLOCK], out_ty) + y_scalar  # the number, splat to a block
    else:
        y = tl.load(y_ptr + yo, mask=mask, other=0).to(out_ty)
    tl.store(o_ptr + offs, x + alpha * y, mask=mask)


def _strides4(t: torch.Tensor, shape: torch.Size) -> list[int]:
    strides = list(t.expand(shape).stride())
    return [0] * (4 - len(strides)) + strides


def add(input, other, alpha=1, out=None):
    y_scalar = not isinstance(other, torch.Tensor)
    dtype = torch.result_type(input, other)
    shape = input.shape if y_scalar else torch.broadcast_shapes(input.shape, other.shape)
    if len(shape) > 4:
        raise NotImplementedError("at most 4 dimensions")
    usable = out is not None and out.shape == shape and out.dtype == dtype and out.is_contiguous()
    o = out if usable else torch.empty(shape, dtype=dtype, device=input.device)
    n = o.numel()
    dims = [1] * (4 - len(shape)) + list(shape)
    y_t = input if y_scalar else other  # a placeholder pointer when `other` is a number
    contig = (
        input.shape == shape
        and input.is_contiguous()
        and (y_scalar or (other.shape == shape and other.is_contiguous()))
    )
    if dtype.is_floating_point:
        alpha, y_value = float(alpha), float(other) if y_scalar else 0.0
    else:
        alpha, y_value = int(alpha), int(other) if y_scalar else 0
    if n:
        BLOCK = 1024
        _add_kernel[(triton.cdiv(n, BLOCK),)](
            input,
            y_t,
            o,
            y_value,
            alpha,
            n,
            dims[1],
            dims[2],
            dims[3],
            *_strides4(input, shape),
            *_strides4(y_t, shape),
            CONTIG=contig,
            Y_SCALAR=y_scalar,
            BLOCK=BLOCK,
        )
    if out is not None and not usable:
        out.resize_(shape)
        out.copy_(o)
        return out
    return o
