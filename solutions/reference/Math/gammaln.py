"""ln|Gamma(x)| in Triton: one program per block of elements, libdevice's lgamma.

libdevice's lgamma handles the poles (+inf), the reflection for negative arguments and keeps a
small absolute error around the zeros of ln|Gamma| (x = 1, 2 and between negative poles).
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _lgamma_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the last block may run past the end
    x = tl.load(x_ptr + offs, mask=mask, other=1.0).to(tl.float32)
    tl.store(y_ptr + offs, libdevice.lgamma(x).to(y_ptr.dtype.element_ty), mask=mask)


def gammaln(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    x = input.contiguous()
    usable = out is not None and out.shape == x.shape and out.dtype == x.dtype
    y = out if usable and out.is_contiguous() else torch.empty_like(x)
    n = x.numel()
    if n:
        BLOCK = 1024
        _lgamma_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)
    if out is not None and y is not out:
        out.resize_(x.shape)
        out.copy_(y)
        return out
    return y
