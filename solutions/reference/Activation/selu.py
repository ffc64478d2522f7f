"""SELU in Triton: one program per block of elements.

The negative branch uses libdevice expm1, which keeps full relative accuracy for tiny |x|
(exp(x) - 1 would cancel); expm1(-inf) = -1 gives the saturation value -scale * alpha.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

ALPHA = 1.6732632423543772848170429916717
SCALE = 1.0507009873554804934193349852946


@triton.jit
def _selu_kernel(x_ptr, y_ptr, n, alpha, scale, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    # Negative branch on x clamped to <= 0 (no overflow for large x). The clamp is a select,
    # not tl.minimum: a GPU min returns 0 for NaN, and selu(NaN) must stay NaN.
    neg = (scale * alpha) * libdevice.expm1(tl.where(x > 0, 0.0, x))
    y = tl.where(x > 0, scale * x, neg)
    tl.store(y_ptr + offs, y, mask=mask)


def selu(input: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    if inplace and not input.is_contiguous():
        raise ValueError("inplace selu needs a contiguous input")
    x = input.contiguous()
    y = x if inplace else torch.empty_like(x)
    n = x.numel()
    BLOCK = 4096
    _selu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, ALPHA, SCALE, BLOCK=BLOCK)
    return y
