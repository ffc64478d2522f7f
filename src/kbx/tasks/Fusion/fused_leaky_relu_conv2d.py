"""Fusion/fused_leaky_relu_conv2d: leaky_relu(conv2d(input, weight, bias), negative_slope)."""

import math

import torch.nn.functional as F

from kbx.suite.inputs import Draw
from kbx.suite.shapes import contraction, conv_geometry, pair
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)  # huge values would let fp32 summation order decide
CALL_ARGS = ("stride", "padding", "dilation", "groups", "negative_slope")


def reference(
    input,
    weight,
    bias=None,
    stride=1,
    padding=0,
    dilation=1,
    groups=1,
    negative_slope=0.01,
    inplace=False,
):
    y = F.conv2d(input, weight, bias, stride, padding, dilation, groups)
    return F.leaky_relu(y, negative_slope=negative_slope, inplace=inplace)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C_in, H, W); params: cout, k (int or (kH, kW)), bias and the call's arguments.
    Weights are scaled by 1/sqrt(contraction length), so the convolution is ~N(0, 1)."""
    q = case.params
    kh, kw = pair(q["k"])
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS)
    k_len = contraction(case)
    weight = d.tensor(
        (q["cout"], case.shape[1] // q.get("groups", 1), kh, kw),
        dist="normal",
        scale=1 / math.sqrt(k_len),
    )
    bias = d.tensor((q["cout"],), dist="normal", scale=0.5) if q.get("bias") else None
    return Inputs((x, weight, bias), {a: q[a] for a in CALL_ARGS if a in q})


TASK = Task(
    entry="fused_leaky_relu_conv2d",
    signature=(
        "fused_leaky_relu_conv2d(input: Tensor, weight: Tensor, bias: Tensor=None, stride: int=1, "
        "padding: int=0, dilation: int=1, groups: int=1, negative_slope: float=0.01, inplace: "
        "bool=False) -> Tensor"
    ),
    description=(
        "2-D convolution (cross-correlation, as torch.nn.functional.conv2d) of a contiguous "
        "float32 NCHW `input` (N, C_in, H, W) with `weight` (C_out, C_in/groups, kH, kW) and "
        "optional `bias` (C_out,), followed by leaky ReLU: y = z for z >= 0, negative_slope * z "
        "otherwise. stride, padding and dilation are ints or (h, w) pairs (padding also 'same' "
        "with stride 1, or 'valid'); OH = (H + 2 pH - dH (kH - 1) - 1) // sH + 1, likewise OW. "
        "Returns a new float32 (N, C_out, OH, OW) tensor (`inplace` only concerns the "
        "intermediate and is not exercised). Cases cover bias and none, negative_slope in "
        "{0.01, 0.2, 0, -0.5, 1.5}, stride 2 and (1, 2), padding 0-2, (1, 2), 'same' and "
        "'valid', dilation 2, rectangular kernels, groups=2 and a depthwise convolution with "
        "channel multiplier 2; weights are scaled to give a ~N(0, 1) convolution."
    ),
    math=r"y = \max(0, z) + s \min(0, z),\quad z_{n,o,i,j} = b_o + \sum_{c,u,v} "
    r"x_{n,c,s_h i - p_h + d_h u,\, s_w j - p_w + d_w v}\,w_{o,c,u,v}",
    precision=(
        "float32 in and out, products accumulated in float32. TF32 (or any reduced-mantissa "
        "input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee') or plain fp32 multiply-adds. rtol=1e-4, atol=1e-4 "
        "(TF32 errors are ~4e-4 here, float32 ones ~1e-6)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 8, 17, 19), seed=1, params={"cout": 12, "k": 3, "bias": True, "padding": 1}),
        Case(
            (3, 6, 23, 21),
            seed=2,
            dist="outlier",
            params={"cout": 10, "k": 5, "stride": 2, "padding": 2, "negative_slope": 0.2},
        ),
        Case(
            (2, 12, 15, 13),
            seed=3,
            dist="corner",
            params={
                "cout": 16,
                "k": 3,
                "bias": True,
                "padding": 2,
                "dilation": 2,
                "groups": 2,
                "negative_slope": 0.0,
            },
        ),
        Case(
            (2, 16, 20, 22),
            seed=4,
            params={
                "cout": 32,
                "k": (3, 5),
                "bias": True,
                "stride": (1, 2),
                "padding": (1, 2),
                "groups": 16,
                "negative_slope": -0.5,
            },
        ),
        Case(
            (1, 9, 31, 29),
            seed=5,
            dist="outlier",
            params={"cout": 7, "k": 3, "padding": "same", "negative_slope": 1.5},
        ),
        Case((2, 5, 12, 16), seed=6, params={"cout": 9, "k": (2, 3), "padding": "valid"}),
    ),
    bench=(
        Case((64, 64, 112, 112), seed=11, params={"cout": 128, "k": 3, "bias": True, "padding": 1}),
        Case((64, 128, 56, 56), seed=12, params={"cout": 256, "k": 3, "padding": 1}),
    ),
    flops=lambda c: 2.0 * c.shape[0] * c.params["cout"] * math.prod(conv_geometry(c)),
    bytes_moved=lambda c: (
        4.0
        * (
            math.prod(c.shape)
            + c.params["cout"] * conv_geometry(c)[2]
            + c.shape[0] * c.params["cout"] * math.prod(conv_geometry(c)[:2])
        )
    ),
    tolerance=Tolerance(rtol=1e-4, atol=1e-4),
)
