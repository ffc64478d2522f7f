"""Math/log: element-wise natural logarithm, with an optional output tensor."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, a negative, huge and tiny (normal) values, both infinities and NaN.
SPECIALS = (0.0, -0.0, -1.0, 1e30, 1e-30, float("inf"), float("-inf"), float("nan"))


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.log(input, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    x = draw.tensor(case.shape, specials=SPECIALS, scale=case.params.get("scale", 1.0))
    if case.params.get("positive"):
        x = x.abs()  # the domain of log: mostly finite results
    # `out` travels as a positional argument so that its final contents are judged too.
    out = torch.zeros_like(x) if case.params.get("out") else None
    return Inputs((x, out))


TASK = Task(
    entry="log",
    signature="log(input: torch.Tensor, out: torch.Tensor=None) -> torch.Tensor",
    description=(
        "Return the natural logarithm of every element of the float32 tensor `input` (any "
        "shape) as a new float32 tensor of the same shape. IEEE semantics as torch.log: "
        "negative inputs and -inf give NaN, +-0 gives -inf, +inf gives +inf, NaN stays NaN. If "
        "`out` (a float32 tensor of the same shape) is given, write the result into it and "
        "return it. Cases use 1-D to 3-D odd shapes; absolute values of normal and outlier "
        "draws (including values close to 1, where log is near 0), raw normal draws (about half "
        "negative), and corner values (signed zeros, -1, 1e30, 1e-30, +-inf, NaN); one case "
        "passes `out`. No subnormal inputs are drawn."
    ),
    math=r"y_i = \ln x_i",
    precision=(
        "float32 in, float32 out, computed in float32; a few ulp of error is within rtol=1e-5, "
        "atol=1e-6 (the absolute term covers outputs near 0, i.e. inputs near 1). NaN and +-inf "
        "must appear exactly where torch.log puts them."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, params={"positive": True}),
        Case((37, 1023), seed=2, dist="outlier", params={"positive": True}),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((2047, 5), seed=4, params={"out": True}),
        Case((257, 31), seed=5, dist="corner", params={"positive": True, "scale": 100.0}),
    ),
    bench=(
        Case((1 << 26,), seed=11, params={"positive": True}),
        Case((8192, 16384), seed=12, params={"positive": True}),
    ),
    flops=lambda c: 1.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    inplace=(1,),
)
