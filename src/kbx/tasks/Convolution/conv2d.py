"""Convolution/conv2d: 2-D cross-correlation of NCHW float32 images (stride, padding, groups)."""

import torch

from kbx.suite.inputs import Draw
from kbx.suite.shapes import conv_hw, conv_in_hw
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Zeros and tiny values only: a huge special would make the fp32 summation order decide the result.
SPECIALS = (0.0, -0.0, 1e-30, -1e-30)
CALL_ARGS = ("stride", "padding", "dilation", "groups")


def reference(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return torch.nn.functional.conv2d(input, weight, bias, stride, padding, dilation, groups)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C_in, H, W); params: cout, k (kernel size), bias, and the call's int arguments."""
    p = case.params
    n, cin, h, w = case.shape
    groups, k = p.get("groups", 1), p["k"]
    d = Draw(case, device)
    x = d.tensor((n, cin, h, w), specials=SPECIALS)
    weight = d.tensor((p["cout"], cin // groups, k, k), dist="normal")
    bias = d.tensor((p["cout"],), dist="normal") if p.get("bias") else None
    return Inputs((x, weight, bias), {a: p[a] for a in CALL_ARGS if a in p})


def flops(c: Case) -> float:
    oh, ow = conv_hw(c)
    cin_g = c.shape[1] // c.params.get("groups", 1)
    return 2.0 * c.shape[0] * c.params["cout"] * oh * ow * cin_g * c.params["k"] ** 2


def bytes_moved(c: Case) -> float:
    n, cin, _, _ = c.shape
    (oh, ow), (rows, cols) = conv_hw(c), conv_in_hw(c)  # a stride past the window skips input
    cout, k = c.params["cout"], c.params["k"]
    bias = cout if c.params.get("bias") else 0
    return (
        4.0 * (n * cin * rows * cols + cout * (cin // c.params.get("groups", 1)) * k * k + bias)
        + 4.0 * n * cout * oh * ow
    )


TASK = Task(
    entry="conv2d",
    signature=(
        "conv2d(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor=None, "
        "stride: int=1, padding: int=0, dilation: int=1, groups: int=1) -> torch.Tensor"
    ),
    description=(
        "2-D convolution (cross-correlation, as torch.nn.functional.conv2d) of a contiguous "
        "float32 NCHW `input` (N, C_in, H, W) with `weight` (C_out, C_in/groups, kH, kW) and "
        "an optional `bias` (C_out,), returning a new (N, C_out, OH, OW) float32 tensor with "
        "OH = (H + 2*padding - dilation*(kH-1) - 1) // stride + 1 (likewise OW). `stride`, "
        "`padding` (zeros) and `dilation` are ints applied to both spatial dimensions; with "
        "`groups` g the channels split into g independent blocks. The cases cover bias and no "
        "bias, stride 1-3, padding, dilation 2, groups=2, depthwise convolution (groups = C_in, "
        "with C_out = 2*C_in), odd non-square images and square 3x3 and 5x5 kernels."
    ),
    math=r"y_{n,o,i,j} = b_o + \sum_{c,u,v} x_{n,\,c,\,s i - p + d u,\,s j - p + d v}\,w_{o,c,u,v}",
    precision=(
        "float32 in and out, products accumulated in float32. TF32 (or any reduced-mantissa "
        "input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee') or plain fp32 multiply-adds. The tolerance "
        "(rtol=1e-4, atol=1e-3, for contraction lengths C_in/groups*kH*kW of 25-150 with "
        "N(0,1) data) admits any fp32 summation order and rejects TF32-rounded inputs."
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
            dist="outlier",
            params={"cout": 32, "k": 5, "bias": True, "stride": 2, "padding": 1, "groups": 16},
        ),
        Case((1, 9, 31, 29), seed=5, params={"cout": 7, "k": 3, "stride": 3}),
    ),
    bench=(
        Case((64, 64, 112, 112), seed=11, params={"cout": 128, "k": 3, "bias": True, "padding": 1}),
        Case(
            (16, 192, 96, 96),
            seed=12,
            params={"cout": 192, "k": 7, "bias": True, "padding": 3, "groups": 192},
        ),
    ),
    flops=flops,
    bytes_moved=bytes_moved,
    tolerance=Tolerance(rtol=1e-4, atol=1e-3),
)
