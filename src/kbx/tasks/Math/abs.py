"""Math/abs: element-wise absolute value of a float or integer tensor, optional output tensor."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, huge magnitudes of both signs, infinities and NaN.
SPECIALS = (0.0, -0.0, 1e30, -1e30, float("inf"), float("-inf"), float("nan"))


def reference(input_tensor: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.abs(input_tensor, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    if case.dtype.is_floating_point:
        x = draw.tensor(case.shape, specials=SPECIALS, scale=case.params.get("scale", 1.0))
    else:  # the whole range of the integer type, its most negative value included
        info = torch.iinfo(case.dtype)
        x = draw.integers(case.shape, info.min, info.max + 1, dtype=case.dtype)
    # `out` is passed positionally so that its final contents are judged too.
    out = torch.zeros_like(x) if case.params.get("out") else None
    return Inputs((x, out))


TASK = Task(
    entry="abs",
    signature="abs(input_tensor, out=None)",
    description=(
        "Return |x| for every element x of `input_tensor` as a new tensor of the same shape and "
        "dtype (like torch.abs). Float inputs: abs(-0.0) = +0.0, abs(+-inf) = +inf, NaN stays "
        "NaN. Integer inputs wrap like two's complement: the most negative value maps to itself "
        "(torch.abs(int8 -128) is -128). If `out` (same shape and dtype) is given, write the "
        "result into it and return it. Cases: float32 normal, outlier and corner values (signed "
        "zeros, +-1e30, +-inf, NaN) in 1-D to 3-D shapes, int32 and int8 tensors drawn over "
        "their whole range, and one case passing `out`."
    ),
    math=r"\mathrm{out}_i = |x_i|",
    precision="Same dtype in and out; the result is exact, so every element must match exactly.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier", params={"scale": 100.0}),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((2047, 5), seed=4, dtype=torch.int32, params={"out": True}),
        Case((5, 7, 301), seed=5, dtype=torch.int8),
        Case((1531, 3), seed=6, dist="corner", params={"out": True}),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((8192, 16384), seed=12, dtype=torch.int32),
    ),
    flops=lambda c: 1.0 * numel(c.shape),
    bytes_moved=lambda c: 2.0 * c.dtype.itemsize * numel(c.shape),
    tolerance=Tolerance(rtol=0.0, atol=0.0),
    inplace=(1,),
)
