"""Round toward zero in Triton: one program per block of elements.

libdevice's trunc keeps the sign (so -0.7 gives -0.0), leaves values of magnitude >= 2^23,
+-inf and NaN unchanged. Integer tensors are copied by the same kernel with IS_FLOAT off.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _trunc_kernel(x_ptr, y_ptr, n, IS_FLOAT: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the last block may run past the end
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    if IS_FLOAT:
        x = libdevice.trunc(x.to(tl.float32)).to(y_ptr.dtype.element_ty)
    tl.store(y_ptr + offs, x, mask=mask)


def trunc(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    x = input.contiguous()
    if out is not None and out.shape == x.shape and out.is_contiguous() and out.dtype == x.dtype:
        y = out  # write straight into the caller's tensor
    else:
        y = torch.empty_like(x)
    n = x.numel()
    BLOCK = 1024
    if n:
        _trunc_kernel[(triton.cdiv(n, BLOCK),)](
            x, y, n, IS_FLOAT=x.is_floating_point(), BLOCK=BLOCK
        )
    if out is not None and y is not out:
        out.resize_(x.shape)  # torch resizes a mismatched `out`, then copies into it
        out.copy_(y)
        return out
    return y
