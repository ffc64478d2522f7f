"""Reduce/min: minimum along a dim and the index of its first occurrence, as (values, indices)."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e30, -1e30, float("inf"), float("-inf"), float("nan"))


def reference(input_tensor, dim, keepdim=False):
    return torch.min(input_tensor, dim, keepdim=keepdim)


def make_inputs(case: Case, device: str) -> Inputs:
    p = dict(case.params)
    x = Draw(case, device).tensor(case.shape, specials=SPECIALS)
    levels = p.pop("levels", None)
    if levels:  # few distinct values: the minimum is tied within most slices
        x = torch.round(x * levels) / levels
    return Inputs((x, p.pop("dim")), p)


TASK = Task(
    entry="min",
    signature="min(input_tensor, dim, keepdim=False)",
    description=(
        "Minimum of the float32 tensor `input_tensor` (1-D to 4-D) along the int `dim` "
        "(possibly negative), as torch.min(input, dim, keepdim): returns the tuple (values, "
        "indices) - float32 minima and int64 positions along `dim` - both of the input's shape "
        "without `dim` (kept with size 1 when keepdim=True). Ties: the smallest index among "
        "equal minima (the first occurrence). NaN propagates: a slice containing NaN gives "
        "value NaN and the index of its first NaN. +-inf compare as usual, -0.0 equals 0.0. "
        "Cases: dims 0, 1, -1, 2 and 3, keepdim both ways, heavy ties (values rounded to a few "
        "levels) and corner values including NaN, +-inf and +-1e30."
    ),
    math=r"v = \min_k x_k,\quad i = \min\{k : x_k = v\}\ \text{(NaN is the minimum)}",
    precision="float32 in; float32 values and int64 indices out, both judged exactly.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 1023), seed=1, params={"dim": 1}),
        Case((129, 65), seed=2, dist="outlier", params={"dim": 0, "keepdim": True}),
        Case((5, 63, 33), seed=3, dist="corner", params={"dim": -1}),
        Case((7, 9, 11, 13), seed=4, params={"dim": 3, "levels": 2}),
        Case((3, 17, 5, 129), seed=5, dist="corner", params={"dim": 2, "keepdim": True}),
        Case((61, 257), seed=6, params={"dim": 0, "levels": 4}),
        Case((4099,), seed=7, params={"dim": 0, "levels": 1}),
        Case((23, 300), seed=8, dist="corner", params={"dim": -1, "levels": 1}),
    ),
    bench=(
        Case((8192, 16384), seed=11, params={"dim": 1}),
        Case((64, 8192, 256), seed=12, params={"dim": 1}),
        Case((2, 1 << 26), seed=13, params={"dim": -1}),
    ),
    flops=lambda c: float(numel(c.shape)),
    bytes_moved=lambda c: 4.0 * numel(c.shape),
    tolerance=Tolerance(rtol=0.0, atol=0.0),
)
