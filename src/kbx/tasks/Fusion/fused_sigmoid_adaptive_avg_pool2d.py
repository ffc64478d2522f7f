"""Fusion/fused_sigmoid_adaptive_avg_pool2d: sigmoid(adaptive_avg_pool2d(x, output_size))."""

import math

import torch

from kbx.suite.inputs import Draw
from kbx.suite.shapes import adaptive_hw, planes
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(input, output_size):
    return torch.sigmoid(torch.nn.functional.adaptive_avg_pool2d(input, output_size))


def make_inputs(case: Case, device: str) -> Inputs:
    """Draws scaled by 2 plus a per-channel offset in [-2, 2], so the outputs spread over
    (0, 1); `big` is the one large corner value (a single sign per case: a window holding
    +1e4 and -1e4 would leave a summation-order-dependent remainder)."""
    big = case.params.get("big", 1e4)
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=(0.0, -0.0, big, 1e-30, -1e-30), scale=2.0)
    c = case.shape[-3]
    offset = d.uniform((c, 1, 1), -2.0, 2.0)
    return Inputs((x + offset, case.params["output_size"]))


TASK = Task(
    entry="fused_sigmoid_adaptive_avg_pool2d",
    signature=(
        "fused_sigmoid_adaptive_avg_pool2d(input: Tensor, output_size: Union[int, Tuple[int, "
        "int]]) -> Tensor"
    ),
    description=(
        "2-D adaptive average pooling followed by an element-wise sigmoid, as "
        "torch.sigmoid(torch.nn.functional.adaptive_avg_pool2d(input, output_size)). `input` is "
        "a contiguous float32 (N, C, H, W) or (C, H, W) tensor; `output_size` an int S (S x S) "
        "or a tuple (OH, OW) whose entries may be None (keep that input size). Output cell "
        "(i, j) averages rows [floor(i*H/OH), ceil((i+1)*H/OH)) and columns [floor(j*W/OW), "
        "ceil((j+1)*W/OW)) (windows differ in size and overlap when the sizes do not divide; OH "
        "> H is allowed), then sigmoid(v) = 1 / (1 + exp(-v)). Returns a new float32 tensor "
        "(..., OH, OW) with values in [0, 1]. Cases: 3-D and 4-D inputs, non-dividing sizes, an "
        "int size, None entries, global pooling (size 1), outputs larger than the input, and "
        "corner values (signed zeros, tiny values, windows holding +1e4 or -1e4 that saturate "
        "the sigmoid)."
    ),
    math=r"y_{i,j} = \sigma\Big(\frac{1}{|R_i||C_j|}\sum_{h \in R_i}\sum_{w \in C_j} x_{h,w}"
    r"\Big),\quad R_i = [\lfloor iH/O_H \rfloor, \lceil (i+1)H/O_H \rceil)",
    precision="float32 in and out, window sums in float32; rtol=1e-5, atol=1e-6.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 5, 17, 23), seed=1, params={"output_size": (5, 7)}),
        Case((3, 4, 31, 19), seed=2, dist="outlier", params={"output_size": 7}),
        Case((6, 13, 11), seed=3, dist="corner", params={"output_size": (None, 4)}),
        Case((2, 3, 9, 10), seed=4, dist="outlier", params={"output_size": (13, 6)}),
        Case((2, 8, 40, 36), seed=5, params={"output_size": 1}),
        Case((1, 6, 45, 37), seed=6, dist="corner", params={"output_size": (3, None), "big": -1e4}),
    ),
    bench=(
        Case((64, 512, 56, 56), seed=11, params={"output_size": 7}),
        Case((128, 1024, 28, 28), seed=12, params={"output_size": 1}),
        Case((32, 128, 112, 112), seed=13, params={"output_size": (5, 7)}),
    ),
    flops=lambda c: float(planes(c) * (c.shape[-2] * c.shape[-1] + 4 * math.prod(adaptive_hw(c)))),
    bytes_moved=lambda c: 4.0 * planes(c) * (c.shape[-2] * c.shape[-1] + math.prod(adaptive_hw(c))),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
