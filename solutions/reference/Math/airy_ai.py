"""Airy Ai in Triton, evaluated in float64 and rounded to the output dtype.

Three regions, each cheap and accurate in float64:
- -7 <= x <= 5: the Maclaurin series Ai(x) = Ai(0) f(x) + Ai'(0) g(x), with
  f = sum 3^k (1/3)_k x^3k / (3k)!, g = sum 3^k (2/3)_k x^(3k+1) / (3k+1)!, summed term by term
  (44 terms). Float64 absorbs the cancellation between f and g (a factor ~1e7 at x = 5) and the
  alternating terms for negative x (~1e5 at x = -7).
- x > 5: Ai(x) ~ exp(-zeta) / (2 sqrt(pi) x^1/4) sum_k (-1)^k u_k / zeta^k, zeta = 2/3 x^1.5.
- x < -7: Ai(x) ~ (cos(zeta - pi/4) P + sin(zeta - pi/4) Q) / (sqrt(pi) |x|^1/4), P and Q the
  even and odd parts of the same series, with a float64 phase (accurate for any float32 x).
The coefficients u_k = u_{k-1} (6k-5)(6k-3)(6k-1) / (216 k (2k-1)) are folded in at compile time.
"""

import torch
import triton
import triton.language as tl

AI0 = tl.constexpr(0.3550280538878172)  # Ai(0)
DAI0 = tl.constexpr(-0.2588194037928068)  # Ai'(0)
SQRT_PI = tl.constexpr(1.7724538509055159)
PI_4 = tl.constexpr(0.7853981633974483)


@triton.jit
def _airy_ai_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float64)

    # Maclaurin series (x clamped so that lanes of the other regions stay finite; tl.maximum
    # returns the non-NaN operand, so NaN lanes are restored at the end)
    s = tl.minimum(tl.maximum(x, -7.0), 5.0)
    s3 = s * s * s
    a = tl.full([BLOCK], 1.0, tl.float64)
    b = s
    f = a
    g = b
    for k in tl.static_range(1, 45):
        a = a * s3 * (1.0 / ((3 * k - 1) * (3 * k)))
        b = b * s3 * (1.0 / ((3 * k) * (3 * k + 1)))
        f += a
        g += b
    series = AI0 * f + DAI0 * g

    # asymptotic expansions in zeta = 2/3 |x|^1.5 (|x| clamped to >= 5)
    y = tl.maximum(tl.abs(x), 5.0)
    zeta = (2.0 / 3.0) * y * tl.sqrt(y)
    rz = 1.0 / zeta
    u = tl.full([BLOCK], 1.0, tl.float64)
    alt = u  # sum (-1)^k u_k / zeta^k, 16 terms (x > 5)
    even = u  # sum (-1)^j u_2j / zeta^2j (x < -7)
    odd = tl.zeros([BLOCK], tl.float64)  # sum (-1)^j u_(2j+1) / zeta^(2j+1)
    for k in tl.static_range(1, 24):
        u = u * rz * ((6 * k - 5) * (6 * k - 3) * (6 * k - 1) / (216 * k * (2 * k - 1)))
        if k < 16:
            if k % 2 == 1:
                alt -= u
            else:
                alt += u
        if k % 2 == 0:
            if (k // 2) % 2 == 0:
                even += u
            else:
                even -= u
        else:
            if (k // 2) % 2 == 0:
                odd += u
            else:
                odd -= u
    root = SQRT_PI * tl.sqrt(tl.sqrt(y))  # sqrt(pi) |x|^1/4
    pos = tl.exp(-zeta) / (2.0 * root) * alt
    phase = zeta - PI_4
    neg = (tl.cos(phase) * even + tl.sin(phase) * odd) / root

    ai = tl.where(x > 5.0, pos, tl.where(x < -7.0, neg, series))
    ai = tl.where(x != x, x, ai)  # NaN in, NaN out: the clamp above turned NaN into -7 or 5
    tl.store(y_ptr + offs, ai.to(y_ptr.dtype.element_ty), mask=mask)


def airy_ai(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    x = input.contiguous()
    usable = out is not None and out.shape == x.shape and out.dtype == x.dtype
    y = out if usable and out.is_contiguous() else torch.empty_like(x)
    n = x.numel()
    if n:
        BLOCK = 1024
        _airy_ai_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=8)
    if out is not None and y is not out:
        out.resize_(x.shape)
        out.copy_(y)
        return out
    return y
