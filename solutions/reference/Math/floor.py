"""Floor in Triton: one program per block of elements.

tl.floor rounds toward -inf exactly and keeps -0.0, +-inf and NaN; integer tensors are copied
through the same kernel without rounding.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _floor_kernel(x_ptr, y_ptr, n, IS_FLOAT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the last block may run past the end
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    if IS_FLOAT:
        x = tl.floor(x.to(tl.float32)).to(y_ptr.dtype.element_ty)
    tl.store(y_ptr + offs, x, mask=mask)


def floor(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    x = input.contiguous()
    usable = out is not None and out.shape == x.shape and out.dtype == x.dtype
    y = out if usable and out.is_contiguous() else torch.empty_like(x)
    n = x.numel()
    if n:
        BLOCK = 1024
        _floor_kernel[(triton.cdiv(n, BLOCK),)](
            x, y, n, IS_FLOAT=x.dtype.is_floating_point, BLOCK=BLOCK
        )
    if out is not None and y is not out:
        out.resize_(x.shape)  # torch resizes a mismatched `out`, then copies into it
        out.copy_(y)
        return out
    return y
