"""Reciprocal in Triton: one program per block of elements.

Integer inputs are converted to float32 in the kernel (torch promotes them to the default
float dtype), then 1 / x follows IEEE rules: 1 / +-0 = +-inf, 1 / +-inf = +-0, NaN stays NaN.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _reciprocal_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the last block may run past the end
    x = tl.load(x_ptr + offs, mask=mask, other=1).to(tl.float32)
    y = 1.0 / x
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def reciprocal(input, out=None):
    x = input.contiguous()
    dtype = x.dtype if x.is_floating_point() else torch.get_default_dtype()
    if out is not None and out.shape == x.shape and out.is_contiguous() and out.dtype == dtype:
        y = out  # write straight into the caller's tensor
    else:
        y = torch.empty(x.shape, dtype=dtype, device=x.device)
    n = x.numel()
    BLOCK = 1024
    if n:
        _reciprocal_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)
    if out is not None and y is not out:
        out.resize_(x.shape)  # torch resizes a mismatched `out`, then copies into it
        out.copy_(y)
        return out
    return y
