"""Reduce/argmax: index of the first maximum along a dim (or of the flattened tensor)."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e30, -1e30, float("inf"), float("-inf"), float("nan"))


def reference(input_tensor, dim, keepdim=False):
    return torch.argmax(input_tensor, dim, keepdim=keepdim)


def make_inputs(case: Case, device: str) -> Inputs:
    p = dict(case.params)
    x = Draw(case, device).tensor(case.shape, specials=p.pop("specials", SPECIALS))
    levels = p.pop("levels", None)
    if levels:  # few distinct values: the maximum is tied within most slices
        x = torch.round(x * levels) / levels
    return Inputs((x, p.pop("dim")), p)


TASK = Task(
    entry="argmax",
    signature="argmax(input_tensor, dim, keepdim=False)",
    description=(
        "Index of the maximum of the float32 tensor `input_tensor` (1-D to 4-D) along `dim`, "
        "as torch.argmax: an int64 tensor of the input's shape without `dim` (kept with size 1 "
        "when keepdim=True). dim=None reduces the flattened tensor and returns a 0-d index into "
        "it (all dims of size 1 with keepdim=True). Ties: the smallest index among equal maxima "
        "(the first occurrence). NaN counts as larger than every number: a slice containing NaN "
        "gives the index of its first NaN. +-inf compare as usual and -0.0 equals 0.0. Cases: "
        "dims 0, 1, -2, 3 and None, keepdim both ways, inputs with heavy ties (values rounded to "
        "a few levels), and corner values including NaN, +-inf and +-1e30."
    ),
    math=r"y = \min\{k : x_k = \max_j x_j\}\ \text{(NaN is the maximum)}",
    precision="float32 in, int64 out; comparisons are exact, so indices must match exactly.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 1023), seed=1, params={"dim": 1}),
        Case((129, 65), seed=2, dist="outlier", params={"dim": 0, "keepdim": True}),
        Case((5, 63, 33), seed=3, dist="corner", params={"dim": -2}),
        Case((7, 9, 11, 13), seed=4, params={"dim": 3, "levels": 2}),
        Case((4099,), seed=5, dist="corner", params={"dim": None}),
        Case((3, 17, 5, 129), seed=6, params={"dim": None, "keepdim": True, "levels": 1}),
        Case((61, 257), seed=7, params={"dim": 0, "levels": 4}),
        Case((23, 300), seed=8, dist="corner", params={"dim": -1, "levels": 1}),
    ),
    bench=(
        Case((8192, 16384), seed=11, params={"dim": 1}),
        Case((64, 8192, 256), seed=12, params={"dim": 1}),
        Case((1 << 27,), seed=13, params={"dim": None}),
    ),
    flops=lambda c: float(numel(c.shape)),
    bytes_moved=lambda c: 4.0 * numel(c.shape),
    tolerance=Tolerance(rtol=0.0, atol=0.0),
)
