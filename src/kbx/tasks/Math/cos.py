"""Math/cos: element-wise cosine of a float32 tensor, including large arguments."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, arguments that need careful range reduction, infinities (-> NaN) and NaN.
SPECIALS = (0.0, -0.0, 1e4, -1e4, 1e6, 3.0e7, float("inf"), float("-inf"), float("nan"))


def reference(input_tensor: torch.Tensor) -> torch.Tensor:
    return torch.cos(input_tensor)


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(case.shape, specials=SPECIALS, scale=case.params.get("scale", 1))
    return Inputs((x,))


TASK = Task(
    entry="cos",
    signature="cos(input_tensor)",
    description=(
        "Return cos(x) for every element x of the float32 tensor `input_tensor` (any shape) as "
        "a new float32 tensor, like torch.cos: accurate for large |x| too (the argument must be "
        "reduced modulo 2*pi accurately, not with a float32 multiple of 2*pi), cos(+-inf) and "
        "cos(NaN) are NaN. Cases: normal values, normal values scaled by 100, outliers, and "
        "corner values (signed zeros, +-1e4, 1e6, 3e7, +-inf, NaN)."
    ),
    math=r"\mathrm{out}_i = \cos(x_i)",
    precision=(
        "float32 in and out, computed in float32 with an accurate range reduction (e.g. "
        "libdevice cos): rtol=1e-5, atol=1e-6. Hardware approximations (cos.approx, __cosf) are "
        "not accurate enough outside [-pi, pi]."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier"),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((2047, 5), seed=4, params={"scale": 100.0}),
        Case((5, 7, 301), seed=5, dist="corner", params={"scale": 30.0}),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((8192, 16384), seed=12, params={"scale": 100.0}),
    ),
    flops=lambda c: 20.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
