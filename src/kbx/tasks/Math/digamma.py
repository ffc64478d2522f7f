"""Math/digamma: element-wise digamma (psi) function, poles and reflection included."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros (-> -inf / +inf), negative integers (poles -> NaN), +-1e-30, the positive root
# 1.4616..., a huge value, infinities and NaN.
SPECIALS = (
    0.0,
    -0.0,
    -1.0,
    -2.0,
    -30.0,
    1e-30,
    -1e-30,
    1.4616321,
    1e30,
    float("inf"),
    float("-inf"),
    float("nan"),
)


def reference(input_tensor: torch.Tensor) -> torch.Tensor:
    # Evaluated in float64 and rounded: the float32 truth.
    return torch.special.digamma(input_tensor.double()).to(input_tensor.dtype)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    if "range" in case.params:
        return Inputs((draw.uniform(case.shape, *case.params["range"]),))
    return Inputs((draw.tensor(case.shape, specials=SPECIALS, scale=case.params.get("scale", 3)),))


TASK = Task(
    entry="digamma",
    signature="digamma(input_tensor)",
    description=(
        "Return psi(x) = d/dx ln Gamma(x) for every element x of the float32 tensor "
        "`input_tensor` (any shape) as a new float32 tensor, like torch.special.digamma: "
        "psi(+0) = -inf, psi(-0) = +inf, NaN at negative integers and at -inf, psi(+inf) = "
        "+inf, NaN stays NaN; negative non-integers through the reflection psi(x) = psi(1 - x) - "
        "pi / tan(pi x) (reduce the argument of tan to [-1/2, 1/2] first, or the result loses "
        "its accuracy next to the poles). Cases: normal values scaled by 3 and by 20, outliers, "
        "uniform values on (0, 3) around the root 1.4616 and on (-10, 0) between the poles, and "
        "corner values (signed zeros, -1, -2, -30, +-1e-30, 1.4616321, 1e30, +-inf, NaN)."
    ),
    math=r"\psi(x) = \frac{d}{dx}\ln\Gamma(x) = \frac{\Gamma'(x)}{\Gamma(x)}",
    precision=(
        "float32 in and out, computed in float32; judged against the float64 value rounded to "
        "float32 with rtol=1e-5, atol=2e-6. atol covers the zero crossings of psi (1.4616 and "
        "one between each pair of negative poles), where float32 evaluation cancels: torch's "
        "own float32 digamma is off by up to 1.6e-6 absolute there (values near +-2.7)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier"),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((2047, 5), seed=4, params={"range": (0.0, 3.0)}),
        Case((5, 7, 301), seed=5, params={"range": (-10.0, 0.0)}),
        Case((611, 13), seed=6, dist="corner", params={"scale": 20.0}),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((8192, 16384), seed=12, params={"scale": 20.0}),
    ),
    flops=lambda c: 40.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=2e-6),
)
