"""Math/log1p: element-wise log(1 + x), accurate for small x, with an optional output tensor."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, the pole at -1, a value below it, huge and tiny values, infinities and NaN.
SPECIALS = (0.0, -0.0, -1.0, -2.0, 1e30, 1e-30, float("inf"), float("-inf"), float("nan"))


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.log1p(input, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    x = draw.tensor(case.shape, specials=SPECIALS, scale=case.params.get("scale", 1.0))
    if case.params.get("positive"):
        x = x.abs()
    # `out` travels as a positional argument so that its final contents are judged too.
    out = torch.zeros_like(x) if case.params.get("out") else None
    return Inputs((x, out))


TASK = Task(
    entry="log1p",
    signature="log1p(input: torch.Tensor, out: torch.Tensor=None) -> torch.Tensor",
    description=(
        "Return log(1 + x) for every element x of the float32 tensor `input` (any shape) as a "
        "new float32 tensor of the same shape, accurate to float32 precision also for tiny |x| "
        "(where forming 1 + x first would lose the digits of x). Semantics as torch.log1p: "
        "x = -1 gives -inf, x < -1 and -inf give NaN, +inf gives +inf, NaN stays NaN. If `out` "
        "(a float32 tensor of the same shape) is given, write the result into it and return it. "
        "Cases use 1-D to 3-D odd shapes: small inputs of both signs (|x| ~ 1e-3), absolute "
        "values of outlier draws, raw normal draws (some below -1), scaled positive values and "
        "corner values (signed zeros, -1, -2, 1e30, 1e-30, +-inf, NaN); one case passes `out`."
    ),
    math=r"y_i = \ln(1 + x_i)",
    precision=(
        "float32 in, float32 out, computed in float32 by a log1p-accurate method; judged with "
        "rtol=1e-5 and a tiny atol=1e-10, so log(1 + x) evaluated naively (relative error "
        "~1e-4 at |x| ~ 1e-3) fails. NaN and +-inf must appear exactly where torch.log1p puts "
        "them."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, params={"scale": 1e-3}),
        Case((37, 1023), seed=2, dist="outlier", params={"positive": True}),
        Case((3, 129, 65), seed=3, dist="corner", params={"scale": 0.5}),
        Case((2047, 5), seed=4, params={"out": True}),
        Case((257, 31), seed=5, dist="corner", params={"positive": True, "scale": 100.0}),
    ),
    bench=(
        Case((1 << 26,), seed=11, params={"positive": True}),
        Case((8192, 16384), seed=12, params={"scale": 0.3}),
    ),
    flops=lambda c: 1.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-10),
    inplace=(1,),
)
