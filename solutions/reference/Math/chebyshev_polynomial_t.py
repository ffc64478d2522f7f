"""Chebyshev polynomials T_n(x) in Triton, following torch's case split.

Each program handles a block of elements. Inside (-1, 1) and for n > 6 the closed form
cos(n * acos(x)) is used (its error grows like n, not n^2 as the recurrence's can); elsewhere the
three-term recurrence T_{k+1} = 2x T_k - T_{k-1} runs for n - 1 steps (a runtime loop over the
degree). x = +-1 and negative degrees are handled exactly, as torch does.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _cheb_t_kernel(x_ptr, y_ptr, numel, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    ax = tl.abs(x)
    # three-term recurrence from (T_0, T_1) = (1, x)
    p = tl.full([BLOCK], 1.0, tl.float32)
    q = x
    for _ in range(1, n):
        p, q = q, 2.0 * x * q - p
    t = q
    if n == 0:
        t = p  # T_0 = 1, NaN included
    if n > 6:  # inside (-1, 1): the trigonometric form
        trig = libdevice.cos(n.to(tl.float32) * libdevice.acos(x))
        t = tl.where(ax < 1.0, trig, t)
    if n >= 0:
        at_one = tl.where((x > 0) | (n % 2 == 0), 1.0, -1.0)  # T_n(1) = 1, T_n(-1) = (-1)^n
        t = tl.where(ax == 1.0, at_one, t)
    else:
        t = tl.zeros([BLOCK], tl.float32)  # torch returns 0 for negative degrees
    tl.store(y_ptr + offs, t.to(y_ptr.dtype.element_ty), mask=mask)


def chebyshev_polynomial_t(input: torch.Tensor, n: int, out: torch.Tensor = None) -> torch.Tensor:
    x = input.contiguous()
    usable = out is not None and out.shape == x.shape and out.dtype == x.dtype
    y = out if usable and out.is_contiguous() else torch.empty_like(x)
    numel = x.numel()
    if numel:
        BLOCK = 1024
        _cheb_t_kernel[(triton.cdiv(numel, BLOCK),)](x, y, numel, int(n), BLOCK=BLOCK)
    if out is not None and y is not out:
        out.resize_(x.shape)
        out.copy_(y)
        return out
    return y
