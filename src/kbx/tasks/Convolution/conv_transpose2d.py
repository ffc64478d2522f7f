"""Convolution/conv_transpose2d: 2-D transposed convolution of NCHW float32 images."""

import torch

from kbx.suite.inputs import Draw
from kbx.suite.shapes import conv_transpose_hw
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Zeros and tiny values only: a huge special would make the fp32 summation order decide the result.
SPECIALS = (0.0, -0.0, 1e-30, -1e-30)
CALL_ARGS = ("stride", "padding", "output_padding", "groups", "dilation")


def reference(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    return torch.nn.functional.conv_transpose2d(
        input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C_in, H, W); params: cout, k (kernel size), bias, and the call's int arguments."""
    p = case.params
    n, cin, h, w = case.shape
    d = Draw(case, device)
    x = d.tensor((n, cin, h, w), specials=SPECIALS)
    weight = d.tensor((cin, p["cout"] // p.get("groups", 1), p["k"], p["k"]), dist="normal")
    bias = d.tensor((p["cout"],), dist="normal") if p.get("bias") else None
    return Inputs((x, weight, bias), {a: p[a] for a in CALL_ARGS if a in p})


def flops(c: Case) -> float:
    n, cin, h, w = c.shape
    return (
        2.0 * n * cin * h * w * (c.params["cout"] // c.params.get("groups", 1)) * c.params["k"] ** 2
    )


def bytes_moved(c: Case) -> float:
    n, cin, h, w = c.shape
    oh, ow = conv_transpose_hw(c)
    cout, k = c.params["cout"], c.params["k"]
    return 4.0 * (
        n * cin * h * w + cin * (cout // c.params.get("groups", 1)) * k * k + n * cout * oh * ow
    )


TASK = Task(
    entry="conv_transpose2d",
    signature=(
        "conv_transpose2d(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor=None, "
        "stride: int=1, padding: int=0, output_padding: int=0, groups: int=1, dilation: int=1) "
        "-> torch.Tensor"
    ),
    description=(
        "2-D transposed convolution (the adjoint of conv2d, as "
        "torch.nn.functional.conv_transpose2d) of a contiguous float32 NCHW `input` "
        "(N, C_in, H, W) with `weight` (C_in, C_out/groups, kH, kW) and an optional `bias` "
        "(C_out,): input pixel (ih, iw) of channel c adds x * weight[c, o, kh, kw] to output "
        "pixel (ih*stride - padding + kh*dilation, iw*stride - padding + kw*dilation) of every "
        "output channel o of c's group; contributions falling outside the output are dropped. "
        "Output (N, C_out, OH, OW) float32 with OH = (H-1)*stride - 2*padding + "
        "dilation*(kH-1) + output_padding + 1 (likewise OW). All int arguments apply to both "
        "spatial dims; output_padding < max(stride, dilation) only adds rows/columns at the "
        "bottom/right. Cases: bias and no bias, stride 1-3, padding, output_padding 1-2, "
        "dilation 2, groups 2 and depthwise (groups = C_in), kernels 3-5, odd sizes."
    ),
    math=r"y_{n,o,h,w} = b_o + \sum_{c \in g(o)} \sum_{k_h,k_w} "
    r"x_{n,c,\frac{h + p - d k_h}{s},\frac{w + p - d k_w}{s}}\,W_{c,o,k_h,k_w}"
    r"\ \text{(terms with non-integer or out-of-range indices omitted)}",
    precision=(
        "float32 in and out, products accumulated in float32. TF32 (or any reduced-mantissa "
        "input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee') or plain fp32 multiply-adds. The tolerance "
        "(rtol=1e-4, atol=1e-3 for N(0,1) data) admits any fp32 summation order and rejects "
        "TF32-rounded inputs."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 8, 9, 11), seed=1, params={"cout": 6, "k": 3, "bias": True}),
        Case(
            (2, 12, 7, 10),
            seed=2,
            dist="outlier",
            params={"cout": 8, "k": 4, "stride": 2, "padding": 1},
        ),
        Case(
            (1, 16, 6, 7),
            seed=3,
            dist="corner",
            params={
                "cout": 12,
                "k": 3,
                "bias": True,
                "stride": 2,
                "padding": 1,
                "output_padding": 1,
                "groups": 2,
            },
        ),
        Case(
            (2, 10, 8, 9),
            seed=4,
            params={
                "cout": 14,
                "k": 3,
                "stride": 3,
                "padding": 2,
                "dilation": 2,
                "output_padding": 2,
            },
        ),
        Case(
            (2, 8, 11, 6),
            seed=5,
            dist="outlier",
            params={
                "cout": 16,
                "k": 5,
                "bias": True,
                "stride": 2,
                "padding": 2,
                "output_padding": 1,
                "groups": 8,
            },
        ),
    ),
    bench=(
        Case(
            (32, 256, 64, 64),
            seed=11,
            params={"cout": 128, "k": 4, "bias": True, "stride": 2, "padding": 1},
        ),
        Case((32, 128, 128, 128), seed=12, params={"cout": 128, "k": 3, "padding": 1}),
    ),
    flops=flops,
    bytes_moved=bytes_moved,
    tolerance=Tolerance(rtol=1e-4, atol=1e-3),
)
