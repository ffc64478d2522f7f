"""Activation/sigmoid_bf16: element-wise logistic function 1 / (1 + exp(-x)) on bfloat16."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, large and tiny values, infinities and NaN, all representable in bfloat16.
SPECIALS = (0.0, -0.0, 1e30, -1e30, 1e-3, float("inf"), float("-inf"), float("nan"))


def reference(input: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(input)  # PyTorch evaluates in float32 and rounds once to bfloat16


def make_inputs(case: Case, device: str) -> Inputs:
    return Inputs((Draw(case, device).tensor(case.shape, specials=SPECIALS),))


TASK = Task(
    entry="sigmoid_bf16",
    signature="sigmoid_bf16(input: torch.Tensor) -> torch.Tensor",
    description=(
        "1 / (1 + exp(-x)): +inf -> 1, -inf -> 0, NaN -> NaN, for every element of a contiguous "
        "torch.bfloat16 tensor of any shape, returning a new torch.bfloat16 tensor of the same "
        "shape; the input is not modified. Compute in float32 (load, convert, evaluate, round once "
        "on store), as PyTorch does. Cases: odd 1-D to 5-D shapes, outliers, signed zeros, large "
        "and small values, +-inf and NaN."
    ),
    math=r"\sigma(x) = \frac{1}{1 + e^{-x}}",
    precision=(
        "torch.bfloat16 in and out, evaluated in float32 and rounded once to bfloat16. Tolerance "
        "rtol=8e-3, atol=1e-5: two float32 evaluations rounded to bfloat16 differ by at most one "
        "bfloat16 ulp, and one bfloat16 ulp is at most 2^-7 = 7.8e-3 relative; atol covers results "
        "in the subnormal range."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, dtype=torch.bfloat16),
        Case((37, 1023), seed=2, dtype=torch.bfloat16, dist="outlier"),
        Case((3, 129, 65), seed=3, dtype=torch.bfloat16, dist="corner"),
        Case((515, 33), seed=4, dtype=torch.bfloat16, dist="corner"),
        Case((2, 3, 5, 7, 11), seed=5, dtype=torch.bfloat16, dist="outlier"),
    ),
    bench=(
        Case((1 << 27,), seed=11, dtype=torch.bfloat16),
        Case((16384, 16384), seed=12, dtype=torch.bfloat16),
    ),
    flops=lambda c: 4.0 * numel(c.shape),
    bytes_moved=lambda c: 4.0 * numel(c.shape),
    tolerance=Tolerance(rtol=8e-3, atol=1e-5),
    paper=False,
)
