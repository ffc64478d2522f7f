"""logspace in Triton: one program per block of outputs, each value computed independently.

The exponent of element i is start + i*step for the first half of the range and end - (steps-1-i)
*step for the second, so that both endpoints come out exactly. It is formed in float64 and
raised with exp2(exponent * log2(base)) in float64, then rounded once to float32: exact to
float32 precision. Float64 scalars reach the kernel as (hi, lo) float32 pairs, since Python
floats are passed as float32 kernel arguments.
"""

import math
import struct

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _logspace_kernel(
    out_ptr,
    steps,
    half,
    start_hi,
    start_lo,
    end_hi,
    end_lo,
    step_hi,
    step_lo,
    lb_hi,
    lb_lo,
    BLOCK: tl.constexpr,
):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < steps
    zero = tl.zeros((BLOCK,), tl.float64)  # adding the halves to a float64 zero is exact
    start = (zero + start_hi) + start_lo
    end = (zero + end_hi) + end_lo
    step = (zero + step_hi) + step_lo
    log2_base = (zero + lb_hi) + lb_lo
    from_start = start + step * i.to(tl.float64)
    from_end = end - step * (steps - 1 - i).to(tl.float64)
    e = tl.where(i < half, from_start, from_end)  # each half anchored at its own endpoint
    y = libdevice.exp2(e * log2_base)
    tl.store(out_ptr + i, y.to(out_ptr.dtype.element_ty), mask=mask)


def _split(x):
    """(hi, lo) float32 values with hi + lo == x to about 48 bits."""
    hi = struct.unpack("f", struct.pack("f", x))[0]
    return hi, struct.unpack("f", struct.pack("f", x - hi))[0]


def logspace(
    start, end, steps, base=10.0, dtype=None, layout=torch.strided, device=None, requires_grad=False
):
    steps = int(steps)
    out = torch.empty(steps, dtype=dtype or torch.get_default_dtype(), device=device)
    if steps == 0:
        return out
    start, end, base = float(start), float(end), float(base)
    step = (end - start) / (steps - 1) if steps > 1 else 0.0
    BLOCK = 1024
    _logspace_kernel[(triton.cdiv(steps, BLOCK),)](
        out,
        steps,
        steps // 2 if steps > 1 else 1,  # steps = 1: the single value is base**start
        *_split(start),
        *_split(end),
        *_split(step),
        *_split(math.log2(base)),
        BLOCK=BLOCK,
    )
    return out.requires_grad_(requires_grad)
