"""Fusion/fused_cos_avg_pool1d: cosine, then 1-D average pooling (ceil_mode, count_include_pad)."""

import math

import torch

from kbx.suite.inputs import Draw
from kbx.suite.shapes import pool_out
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e4, -3e3, math.inf, math.nan)  # cos(inf) is NaN; NaN poisons its windows


def reference(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return torch.nn.functional.avg_pool1d(
        torch.cos(input), kernel_size, stride, padding, ceil_mode, count_include_pad
    )


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(case.shape, specials=SPECIALS, scale=2.0)
    p = dict(case.params)
    return Inputs((x, p.pop("kernel_size")), p)


TASK = Task(
    entry="fused_cos_avg_pool1d",
    signature=(
        "fused_cos_avg_pool1d(input: torch.Tensor, kernel_size: int, stride: int=None, "
        "padding: int=0, ceil_mode: bool=False, count_include_pad: bool=True) -> torch.Tensor"
    ),
    description=(
        "avg_pool1d(cos(input)) over the last dim of a contiguous float32 `input` (N, C, L), with "
        "torch.nn.functional.avg_pool1d's semantics. The padding (`padding` zeros on each side, "
        "at most kernel_size // 2) is applied to the cosines, so padded positions are 0, not "
        "cos(0). Window i starts at i * stride - padding (stride=None means kernel_size) and "
        "spans kernel_size positions, cut at L + padding; L_out = floor((L + 2 padding - "
        "kernel_size) / stride) + 1, or with ceil_mode=True the ceiling, minus one if that last "
        "window would start at or beyond L + padding. The window's sum of cosines over real "
        "positions is divided by its length including padding (count_include_pad=True) or by "
        "the number of real positions (False). Returns (N, C, L_out) float32. Cases cover both "
        "flags both ways, strides below, equal to and above the kernel, padding, and corner "
        "inputs with large arguments, +-inf and NaN (cos gives NaN, which propagates)."
    ),
    math=r"y_{n,c,i} = \frac{1}{d_i}\sum_{j \in W_i \cap [0, L)} \cos x_{n,c,j}",
    precision="float32 in and out, cos and window sums in float32; rtol=1e-5, atol=1e-6.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4, 7, 101), seed=1, params={"kernel_size": 3}),
        Case(
            (3, 5, 257),
            seed=2,
            dist="outlier",
            params={"kernel_size": 4, "stride": 2, "ceil_mode": True},
        ),
        Case(
            (2, 9, 63),
            seed=3,
            dist="corner",
            params={"kernel_size": 5, "stride": 3, "padding": 2, "count_include_pad": False},
        ),
        Case(
            (5, 3, 1001),
            seed=4,
            params={
                "kernel_size": 7,
                "stride": 1,
                "padding": 3,
                "ceil_mode": True,
                "count_include_pad": False,
            },
        ),
        Case(
            (3, 2, 50),
            seed=5,
            dist="corner",
            params={"kernel_size": 2, "stride": 5, "padding": 1, "ceil_mode": True},
        ),
        Case(
            (2, 4, 97),
            seed=6,
            dist="outlier",
            params={"kernel_size": 6, "stride": 4, "padding": 3, "ceil_mode": True},
        ),
    ),
    bench=(
        Case((64, 512, 4096), seed=11, params={"kernel_size": 4}),
        Case(
            (32, 256, 8191),
            seed=12,
            params={
                "kernel_size": 3,
                "stride": 2,
                "padding": 1,
                "ceil_mode": True,
                "count_include_pad": False,
            },
        ),
    ),
    flops=lambda c: float(
        c.shape[0] * c.shape[1] * (c.shape[2] * 15 + pool_out(c)[0] * c.params["kernel_size"])
    ),
    bytes_moved=lambda c: 4.0 * c.shape[0] * c.shape[1] * (c.shape[2] + pool_out(c)[0]),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
