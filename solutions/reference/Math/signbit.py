"""signbit in Triton: one program per block of elements, reading the sign bit directly.

A comparison x < 0 misses -0.0 and negative NaNs, so floats are reinterpreted as signed
integers of the same width (bitcast) and tested for < 0, i.e. the top bit. The bool output is
written through a uint8 view of it.
"""

import torch
import triton
import triton.language as tl

_INT_OF = {
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
    torch.float32: torch.int32,
    torch.float64: torch.int64,
}


@triton.jit
def _signbit_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the last block may run past the end
    bits = tl.load(x_ptr + offs, mask=mask, other=0)  # signed integers: the raw bit patterns
    tl.store(y_ptr + offs, (bits < 0).to(tl.uint8), mask=mask)


def signbit(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    x = input.contiguous()
    if x.dtype in _INT_OF:
        x = x.view(_INT_OF[x.dtype])  # same bits, read as a signed integer
    elif x.dtype == torch.bool or not x.dtype.is_signed:
        x = x.view(torch.uint8) if x.dtype == torch.bool else x  # never negative
    if out is not None and out.shape == x.shape and out.is_contiguous():
        y = out  # write straight into the caller's tensor
    else:
        y = torch.empty(x.shape, dtype=torch.bool, device=x.device)
    n = x.numel()
    BLOCK = 1024
    if n:
        _signbit_kernel[(triton.cdiv(n, BLOCK),)](x, y.view(torch.uint8), n, BLOCK=BLOCK)
    if out is not None and y is not out:
        out.resize_(x.shape)  # torch resizes a mismatched `out`, then copies into it
        out.copy_(y)
        return out
    return y
