"""Absolute value in Triton: one program per block of elements, any float or integer dtype.

tl.abs clears the sign bit of floats (abs(-0.0) = +0.0, NaN stays NaN) and negates negative
integers with two's-complement wraparound, which is what torch.abs does.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _abs_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the last block may run past the end
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(y_ptr + offs, tl.abs(x), mask=mask)


def abs(input_tensor: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    x = input_tensor.contiguous()
    usable = out is not None and out.shape == x.shape and out.dtype == x.dtype
    y = out if usable and out.is_contiguous() else torch.empty_like(x)
    n = x.numel()
    if x.dtype == torch.bool:  # |b| = b
        x, y = x.view(torch.uint8), y.view(torch.uint8)
    if n:
        BLOCK = 2048
        _abs_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)
    if out is not None and not (usable and out.is_contiguous()):
        out.resize_(input_tensor.shape)  # torch resizes a mismatched `out`, then copies into it
        out.copy_(y.view(input_tensor.dtype) if input_tensor.dtype == torch.bool else y)
        return out
    return y.view(input_tensor.dtype) if input_tensor.dtype == torch.bool else y
