"""Math/erfc_sqrt: (erfc(x), sqrt(x)) element-wise; erfc must keep its accuracy in the tail."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, a negative, a tiny value, tail arguments (erfc(9) ~ 4e-37, erfc(11) underflows),
# infinities and NaN.
SPECIALS = (0.0, -0.0, -1.0, 1e-30, 5.0, 9.0, 11.0, float("inf"), float("-inf"), float("nan"))


def reference(input: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.special.erfc(input), torch.sqrt(input)


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(case.shape, specials=SPECIALS, scale=case.params.get("scale", 1))
    return Inputs((x,))


TASK = Task(
    entry="erfc_sqrt",
    signature="erfc_sqrt(input: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]",
    description=(
        "For the float32 tensor `input` (any shape) return a tuple of two new float32 tensors of "
        "its shape: erfc(x) = 1 - erf(x) and sqrt(x), element-wise, like torch.special.erfc and "
        "torch.sqrt. erfc must be accurate relative to its own size in the tail (erfc(5) ~ "
        "1.5e-12, erfc(9) ~ 4e-37): computing 1 - erf(x) in float32 is not. erfc(+inf) = 0, "
        "erfc(-inf) = 2; sqrt of a negative number or -inf is NaN, sqrt(-0.0) = -0.0; NaN stays "
        "NaN. Cases: normal values, normal values scaled by 3 (tail of erfc), outliers and corner "
        "values (signed zeros, -1, 1e-30, 5, 9, 11, +-inf, NaN)."
    ),
    math=r"\mathrm{erfc}(x) = \frac{2}{\sqrt{\pi}} \int_x^\infty e^{-t^2}\,dt,\quad \sqrt{x}",
    precision=(
        "float32 in and out, computed in float32: rtol=1e-5 and a tiny atol=1e-30, so both "
        "outputs are judged relatively down to the float32 underflow region."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier"),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((2047, 5), seed=4, params={"scale": 3.0}),
        Case((5, 7, 301), seed=5, dist="corner", params={"scale": 4.0}),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((8192, 16384), seed=12, params={"scale": 3.0}),
    ),
    flops=lambda c: 25.0 * numel(c.shape),
    bytes_moved=lambda c: 12.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-30),
)
