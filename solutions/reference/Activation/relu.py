"""ReLU in Triton: one program per block of elements.

The selection is written as where(x < 0, 0, x) rather than maximum(x, 0): a comparison with NaN
is false, so NaN passes through unchanged as in PyTorch (a hardware max would return 0).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)  # int64: inputs may exceed 2^31
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.where(x < 0, 0.0, x)  # NaN < 0 is false: NaN is kept
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def relu(input: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    if inplace and not input.is_contiguous():
        raise ValueError("inplace relu needs a contiguous input")
    x = input.contiguous()
    y = x if inplace else torch.empty_like(x)
    n = x.numel()
    BLOCK = 4096
    _relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)
    return y
