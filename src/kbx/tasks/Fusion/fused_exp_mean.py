"""Fusion/fused_exp_mean: mean of exp(input) over dims (or all), keepdim, optional float64."""

import math

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# exp gives 1, 0 (from -1e4 and -inf) and 1e13; the second set adds inf and NaN (NaN poisons
# its slice, inf makes it inf).  No value near exp's overflow: two of them would make the float32
# sum overflow or not depending on the summation order.
SPECIALS = (0.0, -0.0, -1e4, -math.inf, 30.0)
NONFINITE = (0.0, -math.inf, math.inf, math.nan)


def reference(input, dim=None, keepdim=False, dtype=None, out=None):
    y = torch.mean(torch.exp(input), dim=dim, keepdim=keepdim, dtype=dtype)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(case: Case, device: str) -> Inputs:
    p = dict(case.params)
    specials = NONFINITE if p.pop("nonfinite", False) else SPECIALS
    x = Draw(case, device).tensor(case.shape, specials=specials, shift=p.pop("shift", 0.0))
    return Inputs((x,), p)


TASK = Task(
    entry="fused_exp_mean",
    signature="fused_exp_mean(input, dim=None, keepdim=False, dtype=None, out=None)",
    description=(
        "Mean of exp(input): torch.mean(torch.exp(input), dim, keepdim, dtype). `input` is a "
        "contiguous float32 tensor (1-D to 4-D); `dim` is None (mean of all elements, a 0-d "
        "result), an int (possibly negative) or a tuple of ints; keepdim=True keeps reduced dims "
        "with size 1. dtype=None gives a float32 result; dtype=torch.float64 gives a float64 "
        "result (torch evaluates exp in float32 and averages in float64). Cases: single dims "
        "(last, first, middle, negative), a non-adjacent tuple, all dims, dim=None, keepdim both "
        "ways, dtype=torch.float64 (over short dims), and corner values: signed zeros, -1e4 and "
        "-inf (exp = 0), 30 (exp ~ 1e13), and a case with +inf (mean inf) and NaN (mean NaN). "
        "`out` is not passed."
    ),
    math=r"y = \frac{1}{|S|}\sum_{j \in S} e^{x_j}",
    precision=(
        "float32 in; exp in float32 (relative error of a few ulp, e.g. tl.exp or libdevice.exp); "
        "sums accumulated in float32 or wider in any order; output float32 (float64 with "
        "dtype=torch.float64). All terms are positive, so the mean is judged relatively: "
        "rtol=1e-5 (atol=1e-30); inf and NaN must be reproduced."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 1023), seed=1, params={"dim": 1}),
        Case((129, 65), seed=2, dist="outlier", params={"dim": 0, "keepdim": True}),
        Case((5, 63, 33), seed=3, dist="corner", params={"dim": -2}),
        Case((7, 9, 11, 13), seed=4, params={"dim": (0, 2), "keepdim": True, "shift": -2.0}),
        Case((3, 17, 5, 129), seed=5, dist="outlier", params={"dim": (-1, 1)}),
        Case((11, 23, 31), seed=6, params={"dim": -1, "dtype": torch.float64}),
        Case((40, 7), seed=7, dist="corner", params={"dim": -1, "nonfinite": True}),
        Case((19, 301), seed=8, params={"dim": 0, "dtype": torch.float64, "shift": 1.0}),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((4096, 16384), seed=12, params={"dim": -1}),
        Case((64, 4096, 256), seed=13, params={"dim": 1}),
    ),
    flops=lambda c: 2.0 * numel(c.shape),
    bytes_moved=lambda c: 4.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-30),
)
