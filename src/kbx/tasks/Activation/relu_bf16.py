"""Activation/relu_bf16: element-wise max(x, 0) on a torch.bfloat16 tensor."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, large values (bfloat16 range), infinities and NaN (NaN stays NaN).
SPECIALS = (0.0, -0.0, 1e30, -1e30, float("inf"), float("-inf"), float("nan"))


def reference(input: torch.Tensor) -> torch.Tensor:
    return torch.relu(input)


def make_inputs(case: Case, device: str) -> Inputs:
    return Inputs((Draw(case, device).tensor(case.shape, specials=SPECIALS),))


TASK = Task(
    entry="relu_bf16",
    signature="relu_bf16(input: torch.Tensor) -> torch.Tensor",
    description=(
        "ReLU of a contiguous torch.bfloat16 tensor of any shape, returning a new torch.bfloat16 "
        "tensor of the same shape: x if x > 0, 0 if x < 0, NaN stays NaN (a max that drops NaN "
        "is wrong), -inf becomes 0. The input is not modified. Cases: 1-D to 3-D odd shapes, "
        "outliers, signed zeros, large values, +-inf and NaN."
    ),
    math=r"\mathrm{ReLU}(x) = \max(0, x)",
    precision="torch.bfloat16 in and out; the result is exact (a selection, no rounding).",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, dtype=torch.bfloat16),
        Case((37, 1023), seed=2, dtype=torch.bfloat16, dist="outlier"),
        Case((3, 129, 65), seed=3, dtype=torch.bfloat16, dist="corner"),
        Case((515, 33), seed=4, dtype=torch.bfloat16, dist="corner"),
    ),
    bench=(
        Case((1 << 27,), seed=11, dtype=torch.bfloat16),
        Case((16384, 16384), seed=12, dtype=torch.bfloat16),
    ),
    flops=lambda c: float(numel(c.shape)),
    bytes_moved=lambda c: 4.0 * numel(c.shape),
    tolerance=Tolerance(rtol=0.0, atol=0.0),
    paper=False,
)
