"""Digamma in Triton, float32: reflection, upward recurrence, then the asymptotic series.

For x < 0 the reflection psi(x) = psi(1 - x) - pi / tan(pi x) moves the argument to x >= 1; tan
is evaluated at pi * (x - rint(x)), whose argument lies in [-pi/2, pi/2] and is exact next to the
poles. The recurrence psi(z) = psi(z + 1) - 1/z lifts z to >= 6, where the Stirling-type series
ln z - 1/(2z) - sum_k B_2k / (2k z^2k) (seven terms) is accurate to float32 rounding.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _digamma_kernel(x_ptr, y_ptr, n, SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0).to(tl.float32)
    neg = x < 0.0
    r = x - libdevice.rint(x)  # in [-1/2, 1/2]: tan(pi x) = tan(pi r)
    pi = 3.141592653589793
    reflect = tl.where(neg, pi / libdevice.tan(pi * r), 0.0)
    z = tl.where(neg, 1.0 - x, x)
    acc = tl.zeros([BLOCK], tl.float32)
    for _ in range(SHIFT):  # psi(z) = psi(z + 1) - 1/z until z >= SHIFT
        low = z < SHIFT
        acc = tl.where(low, acc - 1.0 / z, acc)
        z = tl.where(low, z + 1.0, z)
    w = 1.0 / (z * z)
    # sum_k B_2k / (2k) w^k with B_2k/(2k) = 1/12, -1/120, 1/252, -1/240, 1/132, -691/32760, 1/12
    tail = w * (
        1.0 / 12
        - w
        * (
            1.0 / 120
            - w
            * (1.0 / 252 - w * (1.0 / 240 - w * (1.0 / 132 - w * (691.0 / 32760 - w * (1.0 / 12)))))
        )
    )
    psi = acc + (tl.log(z) - 0.5 / z - tail) - reflect
    # poles and special values, as torch defines them
    sign_bit = x.to(tl.uint32, bitcast=True) >> 31
    psi = tl.where(x == 0.0, tl.where(sign_bit == 1, float("inf"), float("-inf")), psi)
    psi = tl.where(neg & (x == tl.floor(x)), float("nan"), psi)  # negative integers and -inf
    psi = tl.where(x == float("inf"), x, psi)
    tl.store(y_ptr + offs, psi.to(y_ptr.dtype.element_ty), mask=mask)


def digamma(input_tensor: torch.Tensor) -> torch.Tensor:
    x = input_tensor.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        BLOCK = 1024
        _digamma_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, SHIFT=6, BLOCK=BLOCK)
    return y
