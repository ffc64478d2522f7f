"""Math/i0: element-wise modified Bessel function of the first kind, order 0, optional `out`."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, a tiny value, large arguments of both signs, one past float32 overflow (100),
# and NaN. +-inf is not drawn: torch returns NaN there (its exp(x) * poly / sqrt(x) is inf/inf).
SPECIALS = (0.0, -0.0, 1e-30, 30.0, -30.0, 80.0, -80.0, 100.0, float("nan"))


def reference(input_tensor: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    # Evaluated in float64 and rounded: the float32 truth (inf beyond |x| ~ 91.9).
    r = torch.special.i0(input_tensor.double()).to(input_tensor.dtype)
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
    entry="i0",
    signature="i0(input_tensor, out=None)",
    description=(
        "Return I0(x) = sum_k (x^2/4)^k / (k!)^2 for every element x of the float32 tensor "
        "`input_tensor` (any shape) as a new float32 tensor, like torch.i0. I0 is even, "
        "I0(0) = 1, and it grows like exp(|x|) / sqrt(2 pi |x|), reaching float32 overflow "
        "(+inf) at |x| ~ 91.9; NaN stays NaN. If `out` is given, write into it and return it. "
        "Cases: normal values scaled by 1 and 3, uniform values on (-12, 12), outliers (|x| up "
        "to ~80) and corner values (signed zeros, 1e-30, +-30, +-80, 100 -> inf, NaN); one case "
        "passes `out`. No input lies in 88.7 < |x| < 91.9, where exp(|x|) alone overflows but "
        "I0 does not; +-inf is not drawn."
    ),
    math=r"I_0(x) = \sum_{k=0}^{\infty} \frac{(x^2/4)^k}{(k!)^2}",
    precision=(
        "float32 in and out, computed in float32; judged against the float64 value rounded to "
        "float32 with rtol=1e-5, atol=1e-6 (I0 >= 1, so this is a relative test). torch's own "
        "float32 i0 is within 5e-7 relative."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, params={"scale": 3.0}),
        Case((37, 1023), seed=2, dist="outlier"),
        Case((3, 129, 65), seed=3, dist="corner", params={"scale": 3.0}),
        Case((2047, 5), seed=4, params={"range": (-12.0, 12.0), "out": True}),
        Case((5, 7, 301), seed=5, dist="corner"),
    ),
    bench=(
        Case((1 << 26,), seed=11, params={"scale": 3.0}),
        Case((8192, 16384), seed=12, params={"scale": 10.0}),
    ),
    flops=lambda c: 30.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    inplace=(1,),
)
