"""Fusion/fused_relu_conv2d: relu(conv2d(input, weight, bias, stride, padding, dilation))."""

import math

import torch

from kbx.suite.inputs import Draw
from kbx.suite.shapes import contraction, conv_numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)  # huge values would let fp32 summation order decide
CALL_ARGS = ("stride", "padding", "dilation", "groups", "inplace")


def reference(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, inplace=False):
    y = torch.nn.functional.conv2d(input, weight, bias, stride, padding, dilation, groups)
    return torch.nn.functional.relu(y, inplace=inplace)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C_in, H, W); params: cout, k, bias and the call's arguments. Weights are
    scaled by 1/sqrt(C_in/groups * k * k), so the pre-activations are O(1)."""
    p = case.params
    cin_g = case.shape[1] // p.get("groups", 1)
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS)
    w = d.tensor(
        (p["cout"], cin_g, p["k"], p["k"]), dist="normal", scale=(cin_g * p["k"] ** 2) ** -0.5
    )
    b = d.tensor((p["cout"],), dist="normal", scale=0.5) if p.get("bias") else None
    return Inputs((x, w, b), {a: p[a] for a in CALL_ARGS if a in p})


TASK = Task(
    entry="fused_relu_conv2d",
    signature=(
        "fused_relu_conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, "
        "inplace=False)"
    ),
    description=(
        "2-D convolution followed by ReLU: out = max(conv2d(input, weight, bias, stride, "
        "padding, dilation, groups), 0), with conv2d the cross-correlation of "
        "torch.nn.functional.conv2d. `input` is a contiguous float32 NCHW tensor "
        "(N, C_in, H, W), `weight` float32 (C_out, C_in/groups, k, k), `bias` float32 (C_out,) "
        "or None; stride, padding and dilation are ints applying to both spatial dims "
        "(padding may also be 'same', with stride 1), OH = (H + 2 padding - dilation (k - 1) "
        "- 1) // stride + 1. `inplace` only lets the ReLU overwrite the convolution's own "
        "result and has no visible effect. Returns a new float32 (N, C_out, OH, OW) tensor. "
        "Weights are scaled by 1/sqrt(C_in/groups k^2), so about half the pre-activations are "
        "negative. Cases cover bias and no bias, k = 1, 3 and 5, stride 2, padding 0-2 and "
        "'same', dilation 2, groups 2 and a depthwise convolution (groups = C_in, two outputs "
        "per group)."
    ),
    math=r"y_{n,o,i,j} = \max\Big(0,\ b_o + \sum_{c,u,v} x_{n,c,si-p+du,sj-p+dv}\,w_{o,c,u,v}\Big)",
    precision=(
        "float32 in and out, products accumulated in float32. TF32 (or any reduced-mantissa "
        "input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee') or fp32 multiply-adds. rtol=1e-4, atol=1e-5 "
        "(pre-activations are O(1); contraction lengths 9 to 150)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 8, 17, 19), seed=1, params={"cout": 12, "k": 3, "bias": True, "padding": 1}),
        Case(
            (3, 6, 23, 21),
            seed=2,
            dist="outlier",
            params={"cout": 10, "k": 5, "stride": 2, "padding": 2},
        ),
        Case(
            (2, 12, 15, 13),
            seed=3,
            dist="corner",
            params={"cout": 16, "k": 3, "bias": True, "padding": 2, "dilation": 2, "groups": 2},
        ),
        Case(
            (2, 16, 20, 22),
            seed=4,
            params={"cout": 32, "k": 3, "stride": 2, "padding": 1, "groups": 16},
        ),
        Case(
            (1, 9, 31, 29),
            seed=5,
            dist="outlier",
            params={"cout": 7, "k": 3, "padding": "same", "bias": True},
        ),
        Case((3, 24, 9, 11), seed=6, params={"cout": 40, "k": 1, "inplace": True}),
    ),
    bench=(
        Case((64, 64, 112, 112), seed=11, params={"cout": 128, "k": 3, "bias": True, "padding": 1}),
        Case((64, 128, 56, 56), seed=12, params={"cout": 256, "k": 3, "padding": 1}),
    ),
    flops=lambda c: 2.0 * conv_numel(c) * contraction(c),
    bytes_moved=lambda c: (
        4.0 * (math.prod(c.shape) + c.params["cout"] * contraction(c) + conv_numel(c))
    ),
    tolerance=Tolerance(rtol=1e-4, atol=1e-5),
)
