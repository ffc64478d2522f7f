"""Degrees and square root in Triton: one pass over the input writes both outputs.

The conversion multiplies by float32(180 / pi), as torch.rad2deg does, and sqrt_rn is the
correctly rounded square root (NaN below zero, +-0 and +inf unchanged), like torch.sqrt.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _rad2deg_sqrt_kernel(x_ptr, deg_ptr, root_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the last block may run past the end
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    deg = x * 57.29577951308232  # 180 / pi, rounded to float32
    tl.store(deg_ptr + offs, deg.to(deg_ptr.dtype.element_ty), mask=mask)
    tl.store(root_ptr + offs, tl.sqrt_rn(x).to(root_ptr.dtype.element_ty), mask=mask)


def rad2deg_sqrt(input: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = input.contiguous()
    deg = torch.empty_like(x)
    root = torch.empty_like(x)
    n = x.numel()
    BLOCK = 1024
    if n:
        _rad2deg_sqrt_kernel[(triton.cdiv(n, BLOCK),)](x, deg, root, n, BLOCK=BLOCK)
    return deg, root
