"""Fusion/fused_pixel_shuffle_conv2d: pixel_shuffle(conv2d(input, weight, bias), upscale_factor)."""

import math

import torch.nn.functional as F

from kbx.suite.inputs import Draw
from kbx.suite.shapes import contraction, conv_numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)  # huge values would let fp32 summation order decide
CALL_ARGS = ("stride", "padding", "dilation", "groups", "upscale_factor")


def reference(
    input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, upscale_factor=2
):
    y = F.conv2d(input, weight, bias, stride, padding, dilation, groups)
    return F.pixel_shuffle(y, upscale_factor)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C_in, H, W); params: cout, k, bias and the call's arguments."""
    p = case.params
    cin_g = case.shape[1] // p.get("groups", 1)
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS)
    w = d.tensor(
        (p["cout"], cin_g, p["k"], p["k"]), dist="normal", scale=(cin_g * p["k"] ** 2) ** -0.5
    )
    b = d.tensor((p["cout"],), dist="normal") if p.get("bias") else None
    return Inputs((x, w, b), {a: p[a] for a in CALL_ARGS if a in p})


TASK = Task(
    entry="fused_pixel_shuffle_conv2d",
    signature=(
        "fused_pixel_shuffle_conv2d(input: torch.Tensor, weight: torch.Tensor, bias=None, "
        "stride=1, padding=0, dilation=1, groups=1, upscale_factor=2) -> torch.Tensor"
    ),
    description=(
        "2-D convolution followed by pixel shuffle (sub-pixel upscaling). Y = "
        "torch.nn.functional.conv2d(input, weight, bias, stride, padding, dilation, groups) "
        "with a contiguous float32 NCHW `input` (N, C_in, H, W), `weight` float32 "
        "(C_out, C_in/groups, k, k), `bias` float32 (C_out,) or None, int stride/padding/"
        "dilation for both spatial dims; C_out must be a multiple of r^2, r = upscale_factor. "
        "Then pixel_shuffle moves channel c r^2 + i r + j of pixel (h, w) to channel c, pixel "
        "(h r + i, w r + j): out has shape (N, C_out / r^2, OH r, OW r) and out[n, c, h r + i, "
        "w r + j] = Y[n, c r^2 + i r + j, h, w]. Returns a new float32 tensor. Cases cover "
        "r = 1, 2 and 3, bias and no bias, stride 2, padding, dilation 2 and groups 2."
    ),
    math=r"\mathrm{out}_{n,c,hr+i,wr+j} = \mathrm{conv2d}(x)_{n,\,cr^2+ir+j,\,h,w}",
    precision=(
        "float32 in and out, products accumulated in float32. TF32 (or any reduced-mantissa "
        "input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee') or fp32 multiply-adds. rtol=1e-4, atol=1e-5 "
        "(weights are scaled by 1/sqrt(C_in/groups k^2), so outputs are O(1))."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 8, 17, 19), seed=1, params={"cout": 12, "k": 3, "bias": True, "padding": 1}),
        Case(
            (3, 6, 23, 21),
            seed=2,
            dist="outlier",
            params={"cout": 18, "k": 5, "stride": 2, "padding": 2, "upscale_factor": 3},
        ),
        Case(
            (2, 12, 15, 13),
            seed=3,
            dist="corner",
            params={"cout": 16, "k": 3, "bias": True, "padding": 2, "dilation": 2, "groups": 2},
        ),
        Case((1, 9, 11, 10), seed=4, params={"cout": 7, "k": 3, "upscale_factor": 1}),
        Case(
            (2, 5, 9, 7), seed=5, dist="outlier", params={"cout": 36, "k": 1, "upscale_factor": 3}
        ),
    ),
    bench=(
        Case((32, 64, 128, 128), seed=11, params={"cout": 256, "k": 3, "bias": True, "padding": 1}),
        Case(
            (16, 128, 96, 96),
            seed=12,
            params={"cout": 288, "k": 3, "padding": 1, "upscale_factor": 3},
        ),
    ),
    flops=lambda c: 2.0 * conv_numel(c) * contraction(c),
    bytes_moved=lambda c: (
        4.0 * (math.prod(c.shape) + c.params["cout"] * contraction(c) + conv_numel(c))
    ),
    tolerance=Tolerance(rtol=1e-4, atol=1e-5),
)
