"""Activation/leaky_relu: x for x > 0, negative_slope * x otherwise; optionally in place."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, huge values, infinities and NaN (NaN stays NaN, -inf stays -inf).
SPECIALS = (0.0, -0.0, 1e30, -1e30, float("inf"), float("-inf"), float("nan"))


def reference(input, negative_slope=0.01, inplace=False):
    return torch.nn.functional.leaky_relu(input, negative_slope, inplace)


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(case.shape, specials=SPECIALS)
    return Inputs((x,), dict(case.params))


TASK = Task(
    entry="leaky_relu",
    signature="leaky_relu(input, negative_slope=0.01, inplace=False)",
    description=(
        "Leaky ReLU of a contiguous float32 tensor of any shape: x if x > 0, else "
        "negative_slope * x (a float32 product; `negative_slope` is a positive Python float). "
        "NaN stays NaN, -inf stays -inf, -0.0 gives -0.0. With inplace=False return a new tensor "
        "and leave `input` unchanged; with inplace=True overwrite `input` and return it. The "
        "final contents of `input` are judged as well as the return value. Cases: the default "
        "slope and 0.2, 1e-3 and 1.5, both values of `inplace`, odd shapes, outliers and corner "
        "values (signed zeros, +-1e30, +-inf, NaN)."
    ),
    math=r"\mathrm{LeakyReLU}(x) = \max(0, x) + \alpha \min(0, x)",
    precision=(
        "float32 in and out; one float32 product per negative element: rtol=1e-5, atol=1e-6."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier", params={"negative_slope": 0.2}),
        Case((3, 129, 65), seed=3, dist="corner", params={"inplace": True}),
        Case((515, 33), seed=4, dist="corner", params={"negative_slope": 1.5}),
        Case(
            (2, 17, 3, 41),
            seed=5,
            dist="outlier",
            params={"negative_slope": 1e-3, "inplace": True},
        ),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((16384, 8192), seed=12, params={"negative_slope": 0.2, "inplace": True}),
    ),
    flops=lambda c: 2.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    inplace=(0,),
)
