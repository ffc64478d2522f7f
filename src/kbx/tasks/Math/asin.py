"""Math/asin: element-wise arcsine of a float32 tensor (NaN outside [-1, 1])."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, the ends of the domain, just outside it, a tiny value, infinities and NaN.
SPECIALS = (0.0, -0.0, 1.0, -1.0, 1.0000001, -1.0000001, 1e-30, float("inf"), float("nan"))


def reference(input_tensor: torch.Tensor) -> torch.Tensor:
    return torch.asin(input_tensor)


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(case.shape, specials=SPECIALS, scale=case.params["scale"])
    return Inputs((x,))


TASK = Task(
    entry="asin",
    signature="asin(input_tensor)",
    description=(
        "Return arcsin(x) in [-pi/2, pi/2] for every element x of the float32 tensor "
        "`input_tensor` (any shape) as a new float32 tensor, like torch.asin: NaN for |x| > 1, "
        "+-inf and NaN; asin(+-0) = +-0. Cases: normal values scaled by 0.5 (a few percent fall "
        "outside [-1, 1]) and by 0.05, outliers (scaled by 0.05) and corner values (signed "
        "zeros, +-1, +-(1 + 2^-23), 1e-30, inf, NaN); values close to +-1 test the steep end."
    ),
    math=r"\mathrm{out}_i = \sin^{-1}(x_i)",
    precision="float32 in and out, computed in float32: rtol=1e-5, atol=1e-6.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, params={"scale": 0.5}),
        Case((37, 1023), seed=2, dist="outlier", params={"scale": 0.05}),
        Case((3, 129, 65), seed=3, dist="corner", params={"scale": 0.4}),
        Case((2047, 5), seed=4, params={"scale": 0.05}),
        Case((5, 7, 301), seed=5, dist="corner", params={"scale": 0.6}),
    ),
    bench=(
        Case((1 << 26,), seed=11, params={"scale": 0.4}),
        Case((8192, 16384), seed=12, params={"scale": 0.4}),
    ),
    flops=lambda c: 20.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
