"""Math/gammaln: element-wise ln|Gamma(x)|, poles and negative arguments included, `out`."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros and non-positive integers (poles -> +inf), the roots 1 and 2, a half-integer,
# tiny and huge values, infinities and NaN.
SPECIALS = (
    0.0,
    -0.0,
    -1.0,
    -2.0,
    1.0,
    2.0,
    -2.5,
    1e-30,
    1e30,
    float("inf"),
    float("-inf"),
    float("nan"),
)


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    # Evaluated in float64 and rounded: the float32 truth.
    r = torch.special.gammaln(input.double()).to(input.dtype)
    if out is not None:
        out.copy_(r)
        return out
    return r


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    if "range" in case.params:
        x = draw.uniform(case.shape, *case.params["range"])
    else:
        x = draw.tensor(case.shape, specials=SPECIALS, scale=case.params.get("scale", 3.0))
    out = torch.zeros_like(x) if case.params.get("out") else None
    return Inputs((x, out))


TASK = Task(
    entry="gammaln",
    signature="gammaln(input: torch.Tensor, out: torch.Tensor=None) -> torch.Tensor",
    description=(
        "Return ln|Gamma(x)| for every element x of the float32 tensor `input` (any shape) as a "
        "new float32 tensor, like torch.special.gammaln (torch.lgamma): +inf at 0, -0.0, the "
        "negative integers and +-inf; 0 at x = 1 and 2; negative non-integers through the "
        "reflection ln(pi / |sin(pi x)|) - ln|Gamma(1 - x)|; NaN stays NaN. If `out` is given, "
        "write into it and return it. Cases: normal values scaled by 3 and by 30, outliers, "
        "uniform values on (0, 3) (the roots 1 and 2) and on (-6, 0) (between the poles, where "
        "ln|Gamma| crosses zero too), and corner values (signed zeros, -1, -2, 1, 2, -2.5, "
        "1e-30, 1e30, +-inf, NaN); one case passes `out`."
    ),
    math=r"\mathrm{out}_i = \ln\left|\Gamma(x_i)\right|",
    precision=(
        "float32 in and out, computed in float32; judged against the float64 value rounded to "
        "float32 with rtol=1e-5, atol=3e-6. atol covers the zeros of ln|Gamma|: between the "
        "negative poles CUDA's lgammaf is off by up to 1.1e-6 absolute (x = -7.99998)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier"),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((2047, 5), seed=4, params={"range": (0.0, 3.0), "out": True}),
        Case((5, 7, 301), seed=5, params={"range": (-6.0, 0.0)}),
        Case((611, 13), seed=6, dist="corner", params={"scale": 30.0}),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((8192, 16384), seed=12, params={"scale": 30.0}),
    ),
    flops=lambda c: 40.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=3e-6),
    inplace=(1,),
)
