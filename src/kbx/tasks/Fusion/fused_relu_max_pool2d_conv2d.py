"""Fusion/fused_relu_max_pool2d_conv2d: relu(max_pool2d(conv2d(input, weight, bias)))."""

import torch.nn.functional as F

from kbx.suite.inputs import Draw
from kbx.suite.shapes import conv_geometry, pair, window_out, window_reads
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)  # huge values would let fp32 summation order decide
CONV_ARGS = ("conv_stride", "conv_padding", "conv_dilation", "conv_groups")
POOL_ARGS = ("pool_kernel_size", "pool_stride", "pool_padding", "pool_dilation", "pool_ceil_mode")


def reference(
    input,
    weight,
    bias=None,
    conv_stride=1,
    conv_padding=0,
    conv_dilation=1,
    conv_groups=1,
    pool_kernel_size=2,
    pool_stride=None,
    pool_padding=0,
    pool_dilation=1,
    pool_ceil_mode=False,
    inplace=False,
):
    y = F.conv2d(input, weight, bias, conv_stride, conv_padding, conv_dilation, conv_groups)
    y = F.max_pool2d(y, pool_kernel_size, pool_stride, pool_padding, pool_dilation, pool_ceil_mode)
    return F.relu(y, inplace=inplace)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C_in, H, W); params: cout, k, bias and the call's keyword arguments. Weights
    are scaled by 1/sqrt(C_in/groups * k * k), so the convolution outputs are O(1); biases are
    drawn around -1, so that whole windows are negative and the ReLU matters."""
    p = case.params
    cin_g = case.shape[1] // p.get("conv_groups", 1)
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS)
    w = d.tensor(
        (p["cout"], cin_g, p["k"], p["k"]), dist="normal", scale=(cin_g * p["k"] ** 2) ** -0.5
    )
    b = d.tensor((p["cout"],), dist="normal", scale=0.5, shift=-1.0) if p.get("bias") else None
    return Inputs((x, w, b), {a: p[a] for a in CONV_ARGS + POOL_ARGS + ("inplace",) if a in p})


def flops(c: Case) -> float:
    """The convolution's multiply-adds, then one operation per conv output."""
    oh, ow, k_len = conv_geometry(c, "conv_")
    return c.shape[0] * c.params["cout"] * (2.0 * (oh * ow) * k_len + oh * ow)


def bytes_moved(c: Case) -> float:
    """The input rows and columns that the conv outputs the pool reads need, the weight and bias,
    and the pooled output: the conv output itself can stay on chip."""
    p = c.params
    oh, ow, k_len = conv_geometry(c, "conv_")
    pk, ceil = p.get("pool_kernel_size", 2), bool(p.get("pool_ceil_mode"))
    pool = (pk, p.get("pool_stride") or pk, p.get("pool_padding", 0), p.get("pool_dilation", 1))
    conv = zip(
        c.shape[2:],
        (oh, ow),
        pair(p["k"]),
        pair(p.get("conv_stride", 1)),
        pair(p.get("conv_padding", 0)),
        pair(p.get("conv_dilation", 1)),
        strict=True,
    )
    read, pooled = 1, 1
    for n, o, k, s, pad, dil in conv:
        out = window_out(o, *pool, ceil_mode=ceil)
        used = window_reads(o, *pool, outs=range(out))  # conv outputs some window takes
        read, pooled = read * len(window_reads(n, k, s, pad, dil, sorted(used))), pooled * out
    bias = p["cout"] if p.get("bias") else 0
    return (
        4.0 * (c.shape[0] * c.shape[1] * read + p["cout"] * k_len + bias)
        + 4.0 * c.shape[0] * p["cout"] * pooled
    )


TASK = Task(
    entry="fused_relu_max_pool2d_conv2d",
    signature=(
        "fused_relu_max_pool2d_conv2d(input, weight, bias=None, conv_stride=1, conv_padding=0, "
        "conv_dilation=1, conv_groups=1, pool_kernel_size=2, pool_stride=None, pool_padding=0, "
        "pool_dilation=1, pool_ceil_mode=False, inplace=False)"
    ),
    description=(
        "2-D convolution, then 2-D max pooling, then ReLU: out = relu(max_pool2d(conv2d(x))). "
        "The convolution is torch.nn.functional.conv2d(input, weight, bias, conv_stride, "
        "conv_padding, conv_dilation, conv_groups) on a contiguous float32 NCHW `input` with "
        "`weight` float32 (C_out, C_in/groups, k, k) and `bias` float32 (C_out,) or None. The "
        "pooling is torch.nn.functional.max_pool2d(y, pool_kernel_size, pool_stride (None = the "
        "kernel size), pool_padding (implicit -inf), pool_dilation, pool_ceil_mode): with "
        "ceil_mode the last window may hang over the end, but it must start inside the input or "
        "the left padding. All size/stride/padding/dilation arguments are ints applying to both "
        "spatial dims. `inplace` has no visible effect. Returns a new float32 tensor "
        "(N, C_out, PH, PW). Cases cover bias, conv stride/padding/dilation/groups, pool kernel "
        "2 and 3, explicit strides, pool padding, pool dilation and ceil_mode."
    ),
    math=r"y = \max\big(0,\ \max_{(u,v) \in \mathrm{window}(i,j)} \mathrm{conv2d}(x)_{n,o,u,v}"
    r"\big)",
    precision=(
        "float32 in and out, products accumulated in float32. TF32 (or any reduced-mantissa "
        "input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee') or fp32 multiply-adds. rtol=1e-4, atol=1e-5 "
        "(convolution outputs are O(1))."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 8, 17, 19), seed=1, params={"cout": 12, "k": 3, "bias": True, "conv_padding": 1}),
        Case(
            (3, 6, 23, 21),
            seed=2,
            dist="outlier",
            params={"cout": 10, "k": 5, "conv_stride": 2, "pool_kernel_size": 3, "pool_stride": 2},
        ),
        Case(
            (2, 12, 16, 14),
            seed=3,
            dist="corner",
            params={
                "cout": 16,
                "k": 3,
                "conv_padding": 2,
                "conv_dilation": 2,
                "conv_groups": 2,
                "pool_kernel_size": 3,
                "pool_stride": 2,
                "pool_padding": 1,
                "pool_ceil_mode": True,
            },
        ),
        Case(
            (2, 16, 20, 22),
            seed=4,
            params={"cout": 32, "k": 3, "bias": True, "conv_groups": 16, "pool_dilation": 2},
        ),
        Case(
            (1, 9, 31, 29),
            seed=5,
            dist="outlier",
            params={
                "cout": 7,
                "k": 1,
                "pool_kernel_size": 2,
                "pool_ceil_mode": True,
                "inplace": True,
            },
        ),
    ),
    bench=(
        Case(
            (64, 64, 112, 112),
            seed=11,
            params={"cout": 128, "k": 3, "bias": True, "conv_padding": 1},
        ),
        Case(
            (64, 128, 56, 56),
            seed=12,
            params={
                "cout": 256,
                "k": 3,
                "conv_padding": 1,
                "pool_kernel_size": 3,
                "pool_stride": 2,
                "pool_padding": 1,
            },
        ),
    ),
    flops=flops,
    bytes_moved=bytes_moved,
    tolerance=Tolerance(rtol=1e-4, atol=1e-5),
)
