"""Fusion/fused_instance_norm_selu_conv2d: instance_norm(selu(conv2d(input, weight, bias)))."""

import math

import torch.nn.functional as F

from kbx.suite.inputs import Draw
from kbx.suite.shapes import contraction, conv_geometry, conv_in_hw, conv_numel, pair
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)  # huge values would let fp32 summation order decide
CALL_ARGS = (
    "stride", "padding", "dilation", "groups", "num_features", "eps", "momentum", "affine",
    "track_running_stats",
)  # fmt: skip


def reference(
    input,
    weight,
    bias=None,
    stride=1,
    padding=0,
    dilation=1,
    groups=1,
    num_features=None,
    eps=1e-5,
    momentum=0.1,
    affine=False,
    track_running_stats=False,
):
    # A fresh nn.InstanceNorm2d(num_features, eps, momentum, affine, track_running_stats) in
    # training mode: input statistics, identity affine; the other arguments change nothing.
    y = F.selu(F.conv2d(input, weight, bias, stride, padding, dilation, groups))
    return F.instance_norm(y, eps=eps)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C_in, H, W); params: cout, k (int or (kH, kW)), bias, zero_image and the call's
    arguments. Weights are scaled by 1/sqrt(contraction length): the convolution is ~N(0, 1)."""
    q = case.params
    kh, kw = pair(q["k"])
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS)
    if q.get("zero_image"):  # image 0 is all zeros: its planes are constant (zero variance)
        x[0] = 0.0
    k_len = contraction(case)
    weight = d.tensor(
        (q["cout"], case.shape[1] // q.get("groups", 1), kh, kw),
        dist="normal",
        scale=1 / math.sqrt(k_len),
    )
    bias = d.tensor((q["cout"],), dist="normal") if q.get("bias") else None
    return Inputs((x, weight, bias), {a: q[a] for a in CALL_ARGS if a in q})


TASK = Task(
    entry="fused_instance_norm_selu_conv2d",
    signature=(
        "fused_instance_norm_selu_conv2d(input: torch.Tensor, weight: torch.Tensor, bias=None, "
        "stride=1, padding=0, dilation=1, groups=1, num_features=None, eps=1e-05, momentum=0.1, "
        "affine=False, track_running_stats=False) -> torch.Tensor"
    ),
    description=(
        "2-D convolution, SELU, instance normalization. Z = conv2d(input, weight, bias, stride, "
        "padding, dilation, groups) as torch.nn.functional.conv2d, with `input` a contiguous "
        "float32 (N, C_in, H, W), `weight` (C_out, C_in/groups, kH, kW), `bias` (C_out,) or "
        "None; stride/padding/dilation ints or (h, w) pairs (padding also 'same' or 'valid'). "
        "S = selu(Z) = 1.0507009873554805 * (max(0, Z) + min(0, 1.6732632423543772 * (exp(Z) - "
        "1))). Then every (n, c) plane of S is normalised by its own mean and biased variance "
        "over OH x OW: (S - mean) / sqrt(var + eps). num_features, momentum, affine and "
        "track_running_stats are accepted and change nothing: the result is what a fresh "
        "nn.InstanceNorm2d with those arguments gives in training mode (input statistics, "
        "weight 1, bias 0). Returns a new float32 (N, C_out, OH, OW) tensor. Cases cover bias "
        "and none, stride 2 and (1, 2), padding 0-2, (1, 2) and 'same', dilation 2, "
        "rectangular kernels, groups=2, depthwise with multiplier 2, eps=1e-3, affine and "
        "track_running_stats set, and an all-zero image (constant planes: output 0)."
    ),
    math=r"y = \frac{s - \mu_{n,c}}{\sqrt{\sigma^2_{n,c} + \epsilon}},\quad "
    r"s = \mathrm{SELU}(\mathrm{conv2d}(x, w) + b)",
    precision=(
        "float32 in and out, products accumulated in float32. TF32 (or any reduced-mantissa "
        "input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee') or plain fp32 multiply-adds; plane statistics in "
        "float32 or wider with a stable method. rtol=1e-4, atol=1e-4 (TF32 errors are ~5e-4 "
        "here, float32 ones ~1e-6)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 8, 17, 19), seed=1, params={"cout": 12, "k": 3, "bias": True, "padding": 1}),
        Case(
            (3, 6, 23, 21),
            seed=2,
            dist="outlier",
            params={"cout": 10, "k": 5, "stride": 2, "padding": 2, "eps": 1e-3},
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
                "zero_image": True,
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
                "num_features": 32,
                "affine": True,
                "track_running_stats": True,
            },
        ),
        Case(
            (1, 9, 31, 29),
            seed=5,
            dist="outlier",
            params={"cout": 7, "k": 3, "padding": "same", "momentum": 0.5},
        ),
    ),
    bench=(
        Case((64, 64, 112, 112), seed=11, params={"cout": 128, "k": 3, "bias": True, "padding": 1}),
        Case((64, 128, 56, 56), seed=12, params={"cout": 256, "k": 3, "padding": 1}),
    ),
    flops=lambda c: 2.0 * c.shape[0] * c.params["cout"] * math.prod(conv_geometry(c)),
    bytes_moved=lambda c: (
        4.0
        * (
            c.shape[0] * c.shape[1] * math.prod(conv_in_hw(c))
            + c.params["cout"] * contraction(c)
            + conv_numel(c)
        )
    ),
    tolerance=Tolerance(rtol=1e-4, atol=1e-4),
)
