"""Arcsine in Triton: one program per block of elements, via libdevice's asin.

libdevice asinf is accurate to a few ulp over [-1, 1] (it switches to a sqrt-based form near
+-1, where the series converges slowly) and returns NaN outside the domain.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _asin_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the last block may run past the end
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, libdevice.asin(x).to(y_ptr.dtype.element_ty), mask=mask)


def asin(input_tensor: torch.Tensor) -> torch.Tensor:
    x = input_tensor.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        BLOCK = 1024
        _asin_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)
    return y
