"""Activation/selu: scaled exponential linear unit, optionally in place."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# selu(-inf) = -scale * alpha, selu(inf) = inf, selu(nan) = nan; -1e-30 checks the tiny-negative
# branch (exp(x) - 1 and expm1 agree there within atol).
SPECIALS = (0.0, -0.0, 1e30, -1e30, -1e-30, float("inf"), float("-inf"), float("nan"))


def reference(input: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    return torch.nn.functional.selu(input, inplace=inplace)


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(case.shape, specials=SPECIALS)
    return Inputs((x,), dict(case.params))


TASK = Task(
    entry="selu",
    signature="selu(input: torch.Tensor, inplace: bool=False) -> torch.Tensor",
    description=(
        "SELU of a contiguous float32 tensor of any shape: scale * x for x > 0 and "
        "scale * alpha * (exp(x) - 1) otherwise, with alpha = 1.6732632423543772 and "
        "scale = 1.0507009873554805 (PyTorch's constants). -inf gives -scale * alpha, +inf "
        "gives +inf, NaN stays NaN. With inplace=False return a new tensor and leave `input` "
        "unchanged; with inplace=True overwrite `input` and return it. The final contents of "
        "`input` are judged as well as the return value. Cases: odd shapes, both values of "
        "`inplace`, outliers and corner values (signed zeros, +-1e30, -1e-30, +-inf, NaN)."
    ),
    math=r"\mathrm{SELU}(x) = \lambda\left(\max(0, x) + \min(0, \alpha(e^{x} - 1))\right)",
    precision=(
        "float32 in and out, computed in float32: rtol=1e-5, atol=1e-6 (exp(x) - 1 and expm1 "
        "both pass; a half-precision evaluation does not)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier", params={"inplace": True}),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((515, 33), seed=4, dist="corner", params={"inplace": True}),
        Case((2, 3, 5, 7, 11), seed=5, dist="outlier"),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((16384, 8192), seed=12, params={"inplace": True}),
    ),
    flops=lambda c: 5.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    inplace=(0,),
)
