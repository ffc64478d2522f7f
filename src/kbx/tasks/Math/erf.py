"""Math/erf: element-wise Gauss error function of a float32 tensor."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, a tiny value (erf(x) ~ 2x/sqrt(pi)), saturated arguments, infinities and NaN.
SPECIALS = (0.0, -0.0, 1e-30, -1e-30, 10.0, -10.0, float("inf"), float("-inf"), float("nan"))


def reference(input_tensor: torch.Tensor) -> torch.Tensor:
    return torch.special.erf(input_tensor)


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(case.shape, specials=SPECIALS, scale=case.params.get("scale", 1))
    return Inputs((x,))


TASK = Task(
    entry="erf",
    signature="erf(input_tensor)",
    description=(
        "Return erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt for every element x of the "
        "float32 tensor `input_tensor` (any shape) as a new float32 tensor, like "
        "torch.special.erf: odd, erf(+-inf) = +-1, NaN stays NaN, relative accuracy kept for "
        "tiny |x|. Cases: normal values, normal values scaled by 0.01 and by 3, outliers and "
        "corner values (signed zeros, +-1e-30, +-10, +-inf, NaN)."
    ),
    math=r"\mathrm{erf}(x) = \frac{2}{\sqrt{\pi}} \int_0^x e^{-t^2}\,dt",
    precision="float32 in and out, computed in float32: rtol=1e-5, atol=1e-6.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier"),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((2047, 5), seed=4, params={"scale": 3.0}),
        Case((5, 7, 301), seed=5, params={"scale": 0.01}),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((8192, 16384), seed=12, params={"scale": 2.0}),
    ),
    flops=lambda c: 20.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
