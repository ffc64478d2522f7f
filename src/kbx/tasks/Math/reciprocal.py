"""Math/reciprocal: element-wise 1 / x (integers promoted to float32), optional output tensor."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, +-1, huge and tiny (normal) values whose reciprocals stay normal, inf, NaN.
SPECIALS = (0.0, -0.0, 1.0, -1.0, 1e30, -1e-30, float("inf"), float("-inf"), float("nan"))


def reference(input, out=None):
    return torch.reciprocal(input, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    if case.params.get("int"):  # integers, zero included: promoted to float32
        x = draw.integers(case.shape, -1000, 1000, dtype=case.params["int"])
    else:
        x = draw.tensor(case.shape, specials=SPECIALS)
    # `out` travels as a positional argument so that its final contents are judged too.
    out = torch.zeros(x.shape, device=device) if case.params.get("out") else None
    return Inputs((x, out))


TASK = Task(
    entry="reciprocal",
    signature="reciprocal(input, out=None)",
    description=(
        "Return 1 / x for every element x of `input` (any shape) as a new tensor of the same "
        "shape, as torch.reciprocal. Float32 input gives float32; integer input (int32, int64) "
        "is promoted to float32 first, so 0 gives +inf. IEEE semantics: +-0 gives +-inf, +-inf "
        "gives +-0, NaN stays NaN. If `out` (a float32 tensor of the same shape) is given, "
        "write the result into it and return it. Cases use odd 1-D to 3-D shapes with normal, "
        "outlier and corner float32 values (signed zeros, +-1, 1e30, -1e-30, +-inf, NaN) and "
        "integers in [-1000, 1000); one float and one integer case pass `out`."
    ),
    math=r"y_i = 1 / x_i",
    precision=(
        "float32 out, computed in float32 (integers converted exactly); rtol=1e-5, atol=1e-6, "
        "so an approximate reciprocal of a few ulp passes. NaN and +-inf must appear exactly "
        "where torch.reciprocal puts them."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier"),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((2047, 5), seed=4, dist="corner", params={"out": True}),
        Case((257, 31), seed=5, params={"int": torch.int32}),
        Case((1001,), seed=6, params={"int": torch.int64, "out": True}),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((8192, 16384), seed=12),
    ),
    flops=lambda c: 1.0 * numel(c.shape),
    bytes_moved=lambda c: (
        (4.0 + (8.0 if c.params.get("int") == torch.int64 else 4.0)) * numel(c.shape)
    ),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    inplace=(1,),
)
