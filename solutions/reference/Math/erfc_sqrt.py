"""erfc and sqrt in one Triton pass: each element is loaded once and both results are stored.

libdevice's erfc is accurate relative to its value all the way into the tail (it does not form
1 - erf, which cancels); sqrt_rn is the correctly rounded square root (NaN for x < 0).
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _erfc_sqrt_kernel(x_ptr, e_ptr, s_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the last block may run past the end
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(e_ptr + offs, libdevice.erfc(x).to(e_ptr.dtype.element_ty), mask=mask)
    tl.store(s_ptr + offs, tl.sqrt_rn(x).to(s_ptr.dtype.element_ty), mask=mask)


def erfc_sqrt(input: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = input.contiguous()
    e, s = torch.empty_like(x), torch.empty_like(x)
    n = x.numel()
    if n:
        BLOCK = 1024
        _erfc_sqrt_kernel[(triton.cdiv(n, BLOCK),)](x, e, s, n, BLOCK=BLOCK)
    return e, s
