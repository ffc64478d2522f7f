"""Polygamma psi^(n)(x) in Triton for x > 0: recurrence, then an asymptotic expansion.

n = 0 (digamma): the recurrence psi(x) = psi(x + 1) - 1/x lifts x to >= 10 in ten masked
steps, then psi(x) ~ ln x - 1/(2x) - 1/(12x^2) + 1/(120x^4) - 1/(252x^6) + 1/(240x^8),
whose next term is below 1e-12 there.
n >= 1: psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x), where the Hurwitz zeta sum over (x + k)^-s
(s = n + 1) takes its first 9 terms directly (the recurrence) and the rest from the
Euler-Maclaurin expansion at w = x + 9 (the asymptotic series), 7 Bernoulli terms.
s is a compile-time constant, so the powers are unrolled products of 1 / (x + k) (error about
s/2 ulp), much cheaper than pow. All in float32; NaN propagates.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _polygamma_kernel(
    x_ptr, y_ptr, n, scale, ORDER: tl.constexpr, DIGAMMA: tl.constexpr, BLOCK: tl.constexpr
):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the last block may run past the end
    x = tl.load(x_ptr + offs, mask=mask, other=1.0).to(tl.float32)
    if DIGAMMA:
        shift = tl.zeros((BLOCK,), tl.float32)
        for _ in tl.static_range(10):  # psi(x) = psi(x + 1) - 1/x until x >= 10
            small = x < 10.0
            shift += tl.where(small, 1.0 / x, 0.0)
            x = tl.where(small, x + 1.0, x)
        r = 1.0 / (x * x)
        series = r * (1.0 / 12 - r * (1.0 / 120 - r * (1.0 / 252 - r * (1.0 / 240))))
        y = tl.log(x) - 0.5 / x - series - shift
    else:
        acc = tl.zeros((BLOCK,), tl.float32)
        for k in tl.static_range(9):  # direct terms (x + k)^-s, s = ORDER = n + 1
            r = 1.0 / (x + k)
            p = r
            for _ in tl.static_range(ORDER - 1):  # integer power by multiplication
                p = p * r
            acc += p
        w = x + 9.0
        r = 1.0 / w
        b = r
        for _ in tl.static_range(ORDER - 1):
            b = b * r  # w^-s
        acc += w * b / (ORDER - 1.0) + 0.5 * b  # integral of the tail, half its first term
        t = ORDER * b * r  # s * w^(-s-1)
        r2 = r * r
        acc += t * (1.0 / 12.0)  # B2 / 2!
        t = t * (ORDER + 1.0) * (ORDER + 2.0) * r2
        acc += t * (-1.0 / 720.0)  # B4 / 4!
        t = t * (ORDER + 3.0) * (ORDER + 4.0) * r2
        acc += t * (1.0 / 30240.0)  # B6 / 6!
        t = t * (ORDER + 5.0) * (ORDER + 6.0) * r2
        acc += t * (-1.0 / 1209600.0)  # B8 / 8!
        t = t * (ORDER + 7.0) * (ORDER + 8.0) * r2
        acc += t * (1.0 / 47900160.0)  # B10 / 10!
        t = t * (ORDER + 9.0) * (ORDER + 10.0) * r2
        acc += t * (-691.0 / 1307674368000.0)  # B12 / 12!
        t = t * (ORDER + 11.0) * (ORDER + 12.0) * r2
        acc += t * (1.0 / 74724249600.0)  # B14 / 14!
        y = scale * acc  # (-1)^(n+1) n! zeta(n + 1, x)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def polygamma(n, input, *, out=None):
    if n < 0:
        raise ValueError("polygamma is defined for n >= 0")
    x = input.contiguous()
    dtype = x.dtype if x.is_floating_point() else torch.get_default_dtype()
    result = torch.empty(x.shape, dtype=dtype, device=x.device)
    count = x.numel()
    scale = (-1.0 if n % 2 == 0 else 1.0) * math.factorial(n)
    BLOCK = 512
    if count:
        _polygamma_kernel[(triton.cdiv(count, BLOCK),)](
            x, result, count, scale, ORDER=n + 1, DIGAMMA=n == 0, BLOCK=BLOCK
        )
    if out is not None:
        out.resize_(result.shape)
        out.copy_(result)  # torch writes the result into `out` and returns it
        return out
    return result
