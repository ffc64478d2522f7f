"""Pooling/adaptive_avg_pool2d: averages over adaptive windows tiling an image into OH x OW."""

import math

import torch

from kbx.suite.inputs import Draw
from kbx.suite.shapes import adaptive_hw, planes
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, tiny values and one sign of large value: no window sums +1e4 and -1e4 (that
# cancellation would make the result depend on the summation order).
SPECIALS = (0.0, -0.0, 1e4, 1e-30, -1e-30)


def reference(input, output_size):
    return torch.nn.functional.adaptive_avg_pool2d(input, output_size)


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(case.shape, specials=SPECIALS)
    return Inputs((x, case.params["output_size"]))


TASK = Task(
    entry="adaptive_avg_pool2d",
    signature="adaptive_avg_pool2d(input, output_size)",
    description=(
        "2-D adaptive average pooling of a contiguous float32 `input` (N, C, H, W) or (C, H, W), "
        "as torch.nn.functional.adaptive_avg_pool2d. `output_size` is an int S (S x S) or a "
        "tuple (OH, OW) whose entries may be None (keep that input size). Output cell (i, j) "
        "averages rows [floor(i*H/OH), ceil((i+1)*H/OH)) and columns [floor(j*W/OW), "
        "ceil((j+1)*W/OW)): windows differ in size and may overlap when the sizes do not "
        "divide, and OH > H is allowed. Returns a new float32 tensor (..., OH, OW). Cases: 3-D "
        "and 4-D inputs, non-dividing sizes, a square int size, None entries, global pooling "
        "(size 1), output larger than the input, outliers and corner values."
    ),
    math=r"y_{i,j} = \frac{1}{|R_i||C_j|}\sum_{h \in R_i}\sum_{w \in C_j} x_{h,w},\quad "
    r"R_i = [\lfloor iH/O_H \rfloor, \lceil (i+1)H/O_H \rceil)",
    precision="float32 in and out, window sums in float32; rtol=1e-5, atol=1e-6.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 5, 17, 23), seed=1, params={"output_size": (5, 7)}),
        Case((3, 4, 31, 19), seed=2, dist="outlier", params={"output_size": 7}),
        Case((6, 13, 11), seed=3, dist="corner", params={"output_size": (None, 4)}),
        Case((2, 3, 9, 10), seed=4, dist="outlier", params={"output_size": (13, 6)}),
        Case((2, 8, 56, 56), seed=5, params={"output_size": 1}),
        Case((1, 6, 45, 37), seed=6, dist="corner", params={"output_size": (3, None)}),
    ),
    bench=(
        Case((64, 256, 56, 56), seed=11, params={"output_size": 7}),
        Case((256, 512, 14, 14), seed=12, params={"output_size": 1}),
        Case((32, 128, 112, 112), seed=13, params={"output_size": (5, 7)}),
    ),
    flops=lambda c: float(planes(c) * c.shape[-2] * c.shape[-1]),
    bytes_moved=lambda c: 4.0 * planes(c) * (c.shape[-2] * c.shape[-1] + math.prod(adaptive_hw(c))),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
