"""Known-bad: a NULL dereference in C (faulthandler._sigsegv) after launching a kernel."""
import faulthandler

import torch
import triton
import triton.language as tl


@triton.jit
def _rsqrt(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, 1.0 / tl.sqrt(tl.load(x_ptr + offs, mask=mask, other=1.0)), mask=mask)


def rsqrt(input, out=None):
    x = input.contiguous()
    y = torch.empty_like(x)
    _rsqrt[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    faulthandler._sigsegv()
    return y
