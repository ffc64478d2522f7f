"""Activation/tanh_fp16: element-wise hyperbolic tangent on a torch.float16 tensor."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, large and tiny values, infinities and NaN, all representable in float16.
SPECIALS = (0.0, -0.0, 6e4, -6e4, 1e-3, float("inf"), float("-inf"), float("nan"))


def reference(input: torch.Tensor) -> torch.Tensor:
    return torch.tanh(input)  # PyTorch evaluates in float32 and rounds once to float16


def make_inputs(case: Case, device: str) -> Inputs:
    return Inputs((Draw(case, device).tensor(case.shape, specials=SPECIALS),))


TASK = Task(
    entry="tanh_fp16",
    signature="tanh_fp16(input: torch.Tensor) -> torch.Tensor",
    description=(
        "tanh(x): +-inf -> +-1, NaN -> NaN, tiny x -> x (relative accuracy near 0 matters), for "
        "every element of a contiguous torch.float16 tensor of any shape, returning a new "
        "torch.float16 tensor of the same shape; the input is not modified. Compute in float32 "
        "(load, convert, evaluate, round once on store), as PyTorch does. Cases: odd 1-D to 5-D "
        "shapes, outliers, signed zeros, large and small values, +-inf and NaN."
    ),
    math=r"\tanh(x) = \frac{e^{x} - e^{-x}}{e^{x} + e^{-x}}",
    precision=(
        "torch.float16 in and out, evaluated in float32 and rounded once to float16. Tolerance "
        "rtol=1e-3, atol=1e-5: two float32 evaluations rounded to float16 differ by at most one "
        "float16 ulp, and one float16 ulp is at most 2^-10 = 9.8e-4 relative; atol covers results "
        "in the subnormal range."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, dtype=torch.float16),
        Case((37, 1023), seed=2, dtype=torch.float16, dist="outlier"),
        Case((3, 129, 65), seed=3, dtype=torch.float16, dist="corner"),
        Case((515, 33), seed=4, dtype=torch.float16, dist="corner"),
        Case((2, 3, 5, 7, 11), seed=5, dtype=torch.float16, dist="outlier"),
    ),
    bench=(
        Case((1 << 27,), seed=11, dtype=torch.float16),
        Case((16384, 16384), seed=12, dtype=torch.float16),
    ),
    flops=lambda c: 5.0 * numel(c.shape),
    bytes_moved=lambda c: 4.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-3, atol=1e-5),
    paper=False,
)
