"""Hurwitz zeta zeta(x, q) = sum_k (q + k)^-x in Triton: one program per block of elements.

For x > 1 and q > 0 the first N = 9 terms are summed directly; the rest, a smooth tail
starting at w = q + N >= 9, comes from the Euler-Maclaurin formula
    sum_{k>=N} f(k) = w^(1-x)/(x-1) + w^-x/2 + sum_j B_2j/(2j)! * x(x+1)...(x+2j-2) * w^(-x-2j+1)
with f(k) = (q + k)^-x, truncated after 7 Bernoulli terms: at w >= 9 the neglected term is
below float32 rounding for every x the tail matters for (the tail's share of the sum shrinks
like (q / w)^x). Powers use libdevice's pow (a few ulp), everything is float32.
Special values follow torch: x = 1 gives +inf, x < 1 gives NaN, q <= 0 gives +inf at
integers q and NaN for a non-integer x; NaN propagates.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _zeta_kernel(x_ptr, q_ptr, y_ptr, n, N_DIRECT: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the last block may run past the end
    x = tl.load(x_ptr + offs, mask=mask, other=2.0).to(tl.float32)
    q = tl.load(q_ptr + offs, mask=mask, other=1.0).to(tl.float32)
    acc = tl.zeros((BLOCK,), tl.float32)
    for k in tl.static_range(N_DIRECT):  # direct terms (q + k)^-x
        acc += libdevice.pow(q + k, -x)
    w = q + N_DIRECT
    b = libdevice.pow(w, -x)  # w^-x
    acc += w * b / (x - 1.0) + 0.5 * b  # integral of the tail and half its first term
    inv_w2 = 1.0 / (w * w)
    t = x * b / w  # x * w^(-x-1): the j = 1 derivative factor
    acc += t * (1.0 / 12.0)  # B2 / 2!
    t = t * (x + 1.0) * (x + 2.0) * inv_w2
    acc += t * (-1.0 / 720.0)  # B4 / 4!
    t = t * (x + 3.0) * (x + 4.0) * inv_w2
    acc += t * (1.0 / 30240.0)  # B6 / 6!
    t = t * (x + 5.0) * (x + 6.0) * inv_w2
    acc += t * (-1.0 / 1209600.0)  # B8 / 8!
    t = t * (x + 7.0) * (x + 8.0) * inv_w2
    acc += t * (1.0 / 47900160.0)  # B10 / 10!
    t = t * (x + 9.0) * (x + 10.0) * inv_w2
    acc += t * (-691.0 / 1307674368000.0)  # B12 / 12!
    t = t * (x + 11.0) * (x + 12.0) * inv_w2
    acc += t * (1.0 / 74724249600.0)  # B14 / 14!
    # torch's special values; the series above is only valid for x > 1, q > 0
    q_int = q == tl.floor(q)
    acc = tl.where((q <= 0.0) & (x != tl.floor(x)), float("nan"), acc)
    acc = tl.where((q <= 0.0) & q_int, float("inf"), acc)
    acc = tl.where(x < 1.0, float("nan"), acc)
    acc = tl.where(x == 1.0, float("inf"), acc)
    tl.store(y_ptr + offs, acc.to(y_ptr.dtype.element_ty), mask=mask)


def zeta(input: torch.Tensor, other: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    dev = input.device if isinstance(input, torch.Tensor) else other.device
    x = input if isinstance(input, torch.Tensor) else torch.full((), input, device=dev)
    q = other if isinstance(other, torch.Tensor) else torch.full((), other, device=dev)
    dtype = torch.result_type(input, other)
    shape = torch.broadcast_shapes(x.shape, q.shape)
    x = x.expand(shape).contiguous()  # a copy only where an operand is broadcast
    q = q.expand(shape).contiguous()
    result = torch.empty(shape, dtype=dtype, device=dev)
    n = result.numel()
    BLOCK = 512
    if n:
        _zeta_kernel[(triton.cdiv(n, BLOCK),)](x, q, result, n, N_DIRECT=9, BLOCK=BLOCK)
    if out is not None:
        out.resize_(result.shape)
        out.copy_(result)  # torch writes the result into `out` and returns it
        return out
    return result
