"""Fusion/fused_conv2d_add: conv2d(input, weight, bias) + alpha * other, other broadcastable."""

import torch

from kbx.suite.inputs import Draw
from kbx.suite.shapes import conv_hw
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)  # huge values would let fp32 summation order decide
CALL_ARGS = ("stride", "padding", "dilation", "groups", "alpha")


def reference(
    input,
    weight,
    bias=None,
    other=None,
    stride=1,
    padding=0,
    dilation=1,
    groups=1,
    alpha=1,
    out=None,
):
    y = torch.nn.functional.conv2d(input, weight, bias, stride, padding, dilation, groups)
    if other is not None:
        y = torch.add(y, other, alpha=alpha)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C_in, H, W); params: cout, k, bias, other ('full' | 'channel' | float | None)
    and the call's arguments."""
    p = case.params
    n, cin, h, w = case.shape
    cout, k = p["cout"], p["k"]
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS)
    weight = d.tensor((cout, cin // p.get("groups", 1), k, k), dist="normal")
    bias = d.tensor((cout,), dist="normal") if p.get("bias") else None
    kind = p.get("other", "full")
    if kind == "full":
        other = d.tensor((n, cout, *conv_hw(case)), dist="normal", scale=3.0)
    elif kind == "channel":
        other = d.tensor((cout, 1, 1), dist="normal", scale=3.0)
    else:
        other = kind  # a Python float or None
    return Inputs((x, weight, bias, other), {a: p[a] for a in CALL_ARGS if a in p})


def flops(c: Case) -> float:
    oh, ow = conv_hw(c)
    cin_g = c.shape[1] // c.params.get("groups", 1)
    return 2.0 * c.shape[0] * c.params["cout"] * oh * ow * (cin_g * c.params["k"] ** 2 + 1)


def bytes_moved(c: Case) -> float:
    n, cin, h, w = c.shape
    oh, ow = conv_hw(c)
    cout, k = c.params["cout"], c.params["k"]
    full = c.params.get("other", "full") == "full"
    return 4.0 * (
        n * cin * h * w
        + cout * (cin // c.params.get("groups", 1)) * k * k
        + n * cout * oh * ow * (2 if full else 1)
    )


TASK = Task(
    entry="fused_conv2d_add",
    signature=(
        "fused_conv2d_add(input, weight, bias=None, other=None, stride=1, padding=0, "
        "dilation=1, groups=1, alpha=1, out=None)"
    ),
    description=(
        "2-D convolution (cross-correlation, as torch.nn.functional.conv2d) of a contiguous "
        "float32 NCHW `input` (N, C_in, H, W) with `weight` (C_out, C_in/groups, k, k) and "
        "optional `bias` (C_out,), plus alpha * other: `other` is a float32 tensor "
        "broadcastable to the (N, C_out, OH, OW) result (the full shape, or per channel "
        "(C_out, 1, 1)), a Python float, or None (nothing added). `stride`, `padding` and "
        "`dilation` are ints for both spatial dims (padding may also be the string 'same', "
        "stride 1), OH = (H + 2 padding - dilation (k - 1) - 1) // stride + 1. Returns a new "
        "float32 tensor. Cases cover bias and no bias, all four kinds of `other`, alpha in "
        "{1, -0.5, 2, 3}, stride 1-2, padding 0-2 and 'same', dilation 2, groups=2 and a "
        "depthwise convolution with channel multiplier 2."
    ),
    math=r"y_{n,o,i,j} = b_o + \sum_{c,u,v} x_{n,c,si-p+du,sj-p+dv}\,w_{o,c,u,v} + \alpha\,"
    r"o_{n,o,i,j}",
    precision=(
        "float32 in and out, products accumulated in float32. TF32 (or any reduced-mantissa "
        "input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee') or plain fp32 multiply-adds. Tolerance rtol=1e-4, "
        "atol=1e-3 for contraction lengths C_in/groups*k*k of 25-150 with N(0,1) data."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 8, 17, 19), seed=1, params={"cout": 12, "k": 3, "bias": True, "padding": 1}),
        Case(
            (3, 6, 23, 21),
            seed=2,
            dist="outlier",
            params={
                "cout": 10,
                "k": 5,
                "stride": 2,
                "padding": 2,
                "other": "channel",
                "alpha": -0.5,
            },
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
                "other": 0.5,
                "alpha": 2,
            },
        ),
        Case(
            (2, 16, 20, 22),
            seed=4,
            dist="outlier",
            params={
                "cout": 32,
                "k": 5,
                "bias": True,
                "stride": 2,
                "padding": 1,
                "groups": 16,
                "other": None,
            },
        ),
        Case((1, 9, 31, 29), seed=5, params={"cout": 7, "k": 3, "padding": "same", "alpha": 3}),
    ),
    bench=(
        Case((64, 64, 112, 112), seed=11, params={"cout": 128, "k": 3, "bias": True, "padding": 1}),
        Case(
            (16, 192, 96, 96),
            seed=12,
            params={
                "cout": 192,
                "k": 7,
                "bias": True,
                "padding": 3,
                "groups": 192,
                "other": "channel",
            },
        ),
    ),
    flops=flops,
    bytes_moved=bytes_moved,
    tolerance=Tolerance(rtol=1e-4, atol=1e-3),
)
