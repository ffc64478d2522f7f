"""Activation/relu: element-wise max(x, 0), returned as a new tensor or written in place."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, huge values, infinities and NaN: relu(-inf) = 0, relu(nan) = nan.
SPECIALS = (0.0, -0.0, 1e30, -1e30, float("inf"), float("-inf"), float("nan"))


def reference(input: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    return torch.nn.functional.relu(input, inplace=inplace)


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(case.shape, specials=SPECIALS)
    return Inputs((x,), dict(case.params))


TASK = Task(
    entry="relu",
    signature="relu(input: torch.Tensor, inplace: bool=False) -> torch.Tensor",
    description=(
        "Rectified linear unit of a contiguous float32 tensor of any shape: every element x "
        "becomes x if x > 0 and 0 if x < 0; NaN stays NaN (a max instruction that drops NaN is "
        "wrong) and -inf becomes 0. With inplace=False return a new tensor and leave `input` "
        "unchanged; with inplace=True overwrite `input` and return it. The final contents of "
        "`input` are judged as well as the return value. Cases: 1-D to 3-D odd shapes, both "
        "values of `inplace`, and inputs with signed zeros, +-1e30, +-inf and NaN."
    ),
    math=r"\mathrm{ReLU}(x) = \max(0, x)",
    precision="float32 in and out; the result is exact (a selection, no rounding).",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier", params={"inplace": True}),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((515, 33), seed=4, dist="corner", params={"inplace": True}),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((16384, 8192), seed=12, params={"inplace": True}),
    ),
    flops=lambda c: float(numel(c.shape)),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=0.0, atol=0.0),
    inplace=(0,),
)
