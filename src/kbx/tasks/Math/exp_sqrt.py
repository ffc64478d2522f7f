"""Math/exp_sqrt: sqrt(exp(x)) element-wise, exp evaluated (and overflowing) in float32 first."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, exp near its float32 limit (88), beyond it (89, 100: exp = inf), a very negative
# value (exp underflows), infinities and NaN.
SPECIALS = (0.0, -0.0, 88.0, 89.0, 100.0, -100.0, float("inf"), float("-inf"), float("nan"))


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.sqrt(torch.exp(input), out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(case.shape, specials=SPECIALS, scale=case.params.get("scale", 1))
    out = torch.zeros_like(x) if case.params.get("out") else None
    return Inputs((x, out))


TASK = Task(
    entry="exp_sqrt",
    signature="exp_sqrt(input, out=None)",
    description=(
        "Return sqrt(exp(x)) for every element x of the float32 tensor `input` (any shape) as a "
        "new float32 tensor. The semantics are those of the two-step torch.sqrt(torch.exp(x)) in "
        "float32: exp overflows to +inf for x > ~88.72, so the result is +inf there (not "
        "exp(x/2), which would still be finite); exp(-inf) = 0 gives 0; NaN stays NaN. If `out` "
        "(same shape and dtype) is given, write into it and return it. Cases: normal values, "
        "normal values scaled by 20, outliers, corner values (signed zeros, 88, 89, +-100, "
        "+-inf, NaN) and a case passing `out`."
    ),
    math=r"\mathrm{out}_i = \sqrt{e^{x_i}}",
    precision=(
        "float32 in and out, computed in float32: rtol=1e-5, atol=1e-6 (a fast exp2-based exp "
        "stays within it for |x| <= 88); +inf exactly where float32 exp overflows."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier"),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((2047, 5), seed=4, params={"scale": 20.0}),
        Case((5, 7, 301), seed=5, dist="corner", params={"scale": 10.0, "out": True}),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((8192, 16384), seed=12, params={"scale": 10.0}),
    ),
    flops=lambda c: 10.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    inplace=(1,),
)
