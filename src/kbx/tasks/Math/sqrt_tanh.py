"""Math/sqrt_tanh: element-wise tanh(sqrt(x)), with an optional output tensor."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, a negative, a huge and a tiny value, infinities and NaN.
SPECIALS = (0.0, -0.0, -1.0, 1e30, 1e-30, float("inf"), float("-inf"), float("nan"))


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.tanh(torch.sqrt(input), out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    x = draw.tensor(case.shape, specials=SPECIALS, scale=case.params.get("scale", 1.0))
    if case.params.get("positive"):
        x = x.abs()
    # `out` travels as a positional argument so that its final contents are judged too.
    out = torch.zeros_like(x) if case.params.get("out") else None
    return Inputs((x, out))


TASK = Task(
    entry="sqrt_tanh",
    signature="sqrt_tanh(input, out=None)",
    description=(
        "Return tanh(sqrt(x)) for every element x of the float32 tensor `input` (any shape) as "
        "a new float32 tensor of the same shape. Semantics of torch.tanh(torch.sqrt(x)): "
        "negative x and -inf give NaN, +-0 gives 0, +inf gives 1, NaN stays NaN; results lie "
        "in [0, 1]. If `out` (a float32 tensor of the same shape) is given, write the result "
        "into it and return it. Cases use odd 1-D to 3-D shapes: absolute values of normal "
        "draws (scaled by 0.01 to 1, where tanh has not saturated) and of outlier draws, raw "
        "normal draws (half negative) and corner values (signed zeros, -1, 1e30, 1e-30, +-inf,"
        " NaN); one case passes `out`."
    ),
    math=r"y_i = \tanh\sqrt{x_i}",
    precision=(
        "float32 in, float32 out, computed in float32; rtol=1e-5, atol=1e-6. NaN must appear "
        "exactly where torch puts it."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, params={"positive": True}),
        Case((37, 1023), seed=2, dist="outlier", params={"positive": True}),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((2047, 5), seed=4, params={"out": True}),
        Case((257, 31), seed=5, dist="corner", params={"positive": True, "scale": 0.01}),
    ),
    bench=(
        Case((1 << 26,), seed=11, params={"positive": True}),
        Case((8192, 16384), seed=12, params={"positive": True, "scale": 0.1}),
    ),
    flops=lambda c: 2.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    inplace=(1,),
)
