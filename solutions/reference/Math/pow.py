"""Power in Triton: one program per block of output elements.

A scalar exponent is a kernel argument; the exponents torch special-cases (2, 3, -1, -2,
0.5, -0.5) use the same products, reciprocals and square roots, so special values (e.g. a
-inf base with exponent 0.5) come out as torch's. Every other exponent goes to libdevice's
pow, which follows C99 for zeros, infinities, NaN and negative bases and is accurate to a few
ulp. A tensor exponent is read through broadcast strides over the output, padded to 4-D.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _pow_kernel(
    x_ptr,
    e_ptr,
    out_ptr,
    n,
    e_scalar,
    d1,
    d2,
    d3,
    se0,
    se1,
    se2,
    se3,
    MODE: tl.constexpr,
    FLAT: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the last block may run past the end
    x = tl.load(x_ptr + offs, mask=mask, other=1.0).to(tl.float32)
    if MODE == 0:  # tensor exponent
        if FLAT:
            e_off = offs
        else:  # 4-D coordinates of each output element, then broadcast strides
            i3 = offs % d3
            rest = offs // d3
            i2 = rest % d2
            rest = rest // d2
            e_off = (rest // d1) * se0 + (rest % d1) * se1 + i2 * se2 + i3 * se3
        e = tl.load(e_ptr + e_off, mask=mask, other=1.0).to(tl.float32)
        y = libdevice.pow(x, e)
    elif MODE == 1:  # any other scalar exponent
        y = libdevice.pow(x, tl.full((BLOCK,), e_scalar, tl.float32))
    elif MODE == 2:
        y = x * x
    elif MODE == 3:
        y = x * x * x
    elif MODE == 4:
        y = 1.0 / x
    elif MODE == 5:
        y = 1.0 / (x * x)
    elif MODE == 6:
        y = tl.sqrt_rn(x)
    else:
        y = 1.0 / tl.sqrt_rn(x)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


_SPECIAL = {2.0: 2, 3.0: 3, -1.0: 4, -2.0: 5, 0.5: 6, -0.5: 7}


def pow(input_tensor, exponent, out=None):
    x = input_tensor
    tensor_e = isinstance(exponent, torch.Tensor)
    shape = list(torch.broadcast_shapes(x.shape, exponent.shape) if tensor_e else x.shape)
    x = x.expand(shape).contiguous()  # a copy only if the base itself is broadcast
    result = torch.empty(shape, dtype=torch.result_type(x, exponent), device=x.device)
    shape4 = [1] * (4 - len(shape)) + shape
    if tensor_e:
        mode = 0
        e = exponent.reshape([1] * (4 - exponent.dim()) + list(exponent.shape))
        flat = list(e.shape) == shape4 and e.is_contiguous()
        strides = [
            s if d > 1 else 0 for s, d in zip(e.expand(shape4).stride(), shape4, strict=True)
        ]
        e_scalar = 0.0
    else:
        mode = _SPECIAL.get(float(exponent), 1)
        e, flat, strides, e_scalar = x, True, [0, 0, 0, 0], float(exponent)
    n = result.numel()
    BLOCK = 1024
    if n:
        _pow_kernel[(triton.cdiv(n, BLOCK),)](
            x,
            e,
            result,
            n,
            e_scalar,
            shape4[1],
            shape4[2],
            shape4[3],
            *strides,
            MODE=mode,
            FLAT=flat,
            BLOCK=BLOCK,
        )
    if out is not None:
        out.resize_(result.shape)
        out.copy_(result)  # torch writes the result into `out` and returns it
        return out
    return result
