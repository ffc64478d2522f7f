"""Math/trunc: round every element toward zero, with an optional output tensor."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, halves, the last non-integer floats below 2^23, integers, huge values, inf, NaN.
SPECIALS = (
    0.0,
    -0.0,
    0.5,
    -0.5,
    -2.5,
    8388607.5,
    -4194303.75,
    16777215.0,
    1e30,
    float("inf"),
    float("-inf"),
    float("nan"),
)


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.trunc(input, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    if case.params.get("int"):  # integer input: trunc returns a copy
        x = draw.integers(case.shape, -(2**31), 2**31 - 1, dtype=torch.int32)
    else:
        x = draw.tensor(case.shape, specials=SPECIALS, scale=case.params.get("scale", 1.0))
    # `out` travels as a positional argument so that its final contents are judged too.
    out = torch.zeros_like(x) if case.params.get("out") else None
    return Inputs((x, out))


TASK = Task(
    entry="trunc",
    signature="trunc(input: torch.Tensor, out: torch.Tensor=None) -> torch.Tensor",
    description=(
        "Round every element of `input` toward zero (drop the fractional part) and return a "
        "new tensor of the same shape and dtype, as torch.trunc: -2.7 gives -2, 0.5 gives 0 "
        "(negative fractions give -0.0), floats of magnitude >= 2^23 are already integers and "
        "stay unchanged, +-inf and NaN pass through. An integer tensor (int32) is returned as "
        "an unchanged copy. If `out` (a tensor of the same shape and dtype) is given, write the "
        "result into it and return it. Float32 cases use normal draws scaled by 1 to 1e5, "
        "outliers, and corner values (signed zeros, +-0.5, -2.5, 8388607.5, -4194303.75, "
        "16777215, 1e30, +-inf, NaN); one int32 case and one case with `out`."
    ),
    math=r"y_i = \operatorname{sign}(x_i)\,\lfloor |x_i| \rfloor",
    precision="Exact: the result is an integer-valued float32 (or the int32 input) and must "
    "match torch bit for bit up to the sign of zero; NaN and +-inf where torch puts them.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, params={"scale": 10.0}),
        Case((37, 1023), seed=2, dist="outlier", params={"scale": 1e5}),
        Case((3, 129, 65), seed=3, dist="corner", params={"scale": 3.0}),
        Case((2047, 5), seed=4, dist="corner", params={"out": True}),
        Case((257, 31), seed=5, params={"int": True}),
    ),
    bench=(
        Case((1 << 26,), seed=11, params={"scale": 100.0}),
        Case((8192, 16384), seed=12, params={"scale": 1e4}),
    ),
    flops=lambda c: 1.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=0.0, atol=0.0),
    inplace=(1,),
)
