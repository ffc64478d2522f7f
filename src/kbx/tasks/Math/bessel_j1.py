"""Math/bessel_j1: element-wise Bessel function of the first kind, order 1, optional `out`."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, a tiny value, the first two zeros of J1 (as float32), +-100 and NaN. +-inf is
# not drawn: torch returns NaN there.
SPECIALS = (0.0, -0.0, 1e-30, 3.8317060, -7.0155867, 100.0, -100.0, float("nan"))


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    # Evaluated in float64 and rounded: the float32 truth.
    r = torch.special.bessel_j1(input.double()).to(input.dtype)
    if out is not None:
        out.copy_(r)
        return out
    return r


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    if "range" in case.params:
        x = draw.uniform(case.shape, *case.params["range"])
    else:
        x = draw.tensor(case.shape, specials=SPECIALS, scale=case.params.get("scale", 1.0))
    out = torch.zeros_like(x) if case.params.get("out") else None
    return Inputs((x, out))


TASK = Task(
    entry="bessel_j1",
    signature="bessel_j1(input: torch.Tensor, out: torch.Tensor=None) -> torch.Tensor",
    description=(
        "Return J1(x), the Bessel function of the first kind of order 1, for every element x of "
        "the float32 tensor `input` (any shape) as a new float32 tensor, like "
        "torch.special.bessel_j1. J1 is odd, J1(0) = 0 (sign of zero kept), it oscillates with "
        "zeros at 3.8317, 7.0156, ... and decays like sqrt(2 / (pi x)); NaN stays NaN. If `out` "
        "is given, write into it and return it. Cases: normal values scaled by 1 and 5, "
        "uniform values on (0, 30), outliers (|x| up to ~80) and corner values (signed zeros, "
        "1e-30, the first two zeros, +-100, NaN); one case passes `out`. +-inf is not drawn."
    ),
    math=r"J_1(x) = \sum_{k=0}^{\infty} \frac{(-1)^k}{k!\,(k+1)!} \left(\frac{x}{2}\right)^{2k+1}",
    precision=(
        "float32 in and out, computed in float32; judged against the float64 value rounded to "
        "float32 with rtol=1e-5, atol=1e-6 (atol covers the zeros of J1, where a float32 "
        "evaluation has no relative accuracy). torch's own float32 bessel_j1 is within 2e-7 "
        "absolute on these inputs."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, params={"scale": 5.0}),
        Case((37, 1023), seed=2, dist="outlier"),
        Case((3, 129, 65), seed=3, dist="corner", params={"scale": 5.0}),
        Case((2047, 5), seed=4, params={"range": (0.0, 30.0), "out": True}),
        Case((5, 7, 301), seed=5, dist="corner"),
    ),
    bench=(
        Case((1 << 26,), seed=11, params={"scale": 5.0}),
        Case((8192, 16384), seed=12, params={"scale": 20.0}),
    ),
    flops=lambda c: 40.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    inplace=(1,),
)
