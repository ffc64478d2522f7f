"""Leaky ReLU in Triton: one program per block of elements.

where(x > 0, x, slope * x) matches PyTorch on every special value: NaN fails the comparison and
NaN * slope is NaN; -inf * slope is -inf; -0.0 * slope is -0.0.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _leaky_relu_kernel(x_ptr, y_ptr, n, slope, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.where(x > 0, x, x * slope)
    tl.store(y_ptr + offs, y, mask=mask)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    if inplace and not input.is_contiguous():
        raise ValueError("inplace leaky_relu needs a contiguous input")
    x = input.contiguous()
    y = x if inplace else torch.empty_like(x)
    n = x.numel()
    BLOCK = 4096
    _leaky_relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, float(negative_slope), BLOCK=BLOCK)
    return y
