"""Natural logarithm in Triton: one program per block of elements.

tl.log follows IEEE rules on the special values (log(+-0) = -inf, log(x < 0) = NaN,
log(inf) = inf), which is what torch.log returns.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _log_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the last block may run past the end
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    y = tl.log(x.to(tl.float32))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def log(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    x = input.contiguous()
    if out is not None and out.shape == x.shape and out.is_contiguous():
        y = out  # write straight into the caller's tensor
    else:
        y = torch.empty_like(x)
    n = x.numel()
    BLOCK = 1024
    _log_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)
    if out is not None and y is not out:
        out.resize_(x.shape)  # torch resizes a mismatched `out`, then copies into it
        out.copy_(y)
        return out
    return y
