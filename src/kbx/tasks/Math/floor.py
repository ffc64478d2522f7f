"""Math/floor: element-wise floor of a float32 tensor (integers are copied), optional `out`."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, a tiny negative (-> -1), halves, values at and beyond 2^23 (already integers),
# huge magnitudes, infinities and NaN.
SPECIALS = (
    0.0,
    -0.0,
    -1e-30,
    0.5,
    -0.5,
    8388607.5,
    -8388609.0,
    1e30,
    -1e30,
    float("inf"),
    float("-inf"),
    float("nan"),
)


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.floor(input, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    if case.dtype.is_floating_point:
        x = draw.tensor(case.shape, specials=SPECIALS, scale=case.params.get("scale", 100.0))
    else:
        x = draw.integers(case.shape, -(1 << 30), 1 << 30, dtype=case.dtype)
    out = torch.zeros_like(x) if case.params.get("out") else None
    return Inputs((x, out))


TASK = Task(
    entry="floor",
    signature="floor(input: torch.Tensor, out: torch.Tensor=None) -> torch.Tensor",
    description=(
        "Return the largest integer <= x for every element x of `input` (any shape) as a new "
        "tensor of the same dtype, like torch.floor: floor(-0.0) = -0.0, floor(-1e-30) = -1, "
        "+-inf and NaN pass through, floats of magnitude >= 2^23 are already integers. Integer "
        "tensors are returned as an unchanged copy. If `out` is given (same shape and dtype), "
        "write into it and return it. Cases: float32 normal values scaled by 100 and by 3, "
        "outliers, corner values (signed zeros, -1e-30, +-0.5, 2^23 - 0.5, -(2^23 + 1), +-1e30, "
        "+-inf, NaN), an int32 tensor, and a case passing `out`."
    ),
    math=r"\mathrm{out}_i = \lfloor x_i \rfloor",
    precision="Same dtype in and out; the result is exact, so every element must match exactly.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier", params={"scale": 3.0}),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((2047, 5), seed=4, dtype=torch.int32),
        Case((5, 7, 301), seed=5, dist="corner", params={"scale": 3.0, "out": True}),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((8192, 16384), seed=12, params={"scale": 1000.0}),
    ),
    flops=lambda c: 1.0 * numel(c.shape),
    bytes_moved=lambda c: 2.0 * c.dtype.itemsize * numel(c.shape),
    tolerance=Tolerance(rtol=0.0, atol=0.0),
    inplace=(1,),
)
