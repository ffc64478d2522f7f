"""Fusion/fused_relu_batch_norm_conv2d: relu(batch_norm(conv2d(x))), running stats in place."""

import math

import torch.nn.functional as F

from kbx.suite.inputs import Draw
from kbx.suite.shapes import contraction, conv_in_hw, conv_numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)  # huge values would let fp32 summation order decide


def reference(
    input,
    weight,
    bias=None,
    stride=1,
    padding=0,
    dilation=1,
    groups=1,
    running_mean=None,
    running_var=None,
    bn_weight=None,
    bn_bias=None,
    training=False,
    momentum=0.1,
    eps=1e-05,
    inplace=False,
):
    y = F.conv2d(input, weight, bias, stride, padding, dilation, groups)
    y = F.batch_norm(y, running_mean, running_var, bn_weight, bn_bias, training, momentum, eps)
    return F.relu(y, inplace=inplace)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C_in, H, W); params: cout, k, bias, stride, padding, dilation, groups,
    running (pass running statistics), affine ('wb', 'w', 'b', ''), training, momentum, eps.
    Arguments up to bn_bias travel positionally, so the final running statistics are judged."""
    p = dict(case.params)
    cout, k, g = p.pop("cout"), p.pop("k"), p.pop("groups", 1)
    cin_g = case.shape[1] // g
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS)
    w = d.tensor((cout, cin_g, k, k), dist="normal", scale=(cin_g * k * k) ** -0.5)
    b = d.tensor((cout,), dist="normal") if p.pop("bias", False) else None
    rm = d.tensor((cout,), dist="normal", scale=0.3) if p.pop("running", True) else None
    rv = None if rm is None else d.uniform((cout,), 0.5, 2.0)
    affine = p.pop("affine", "")
    bw = d.uniform((cout,), 0.5, 2.0) if "w" in affine else None
    bb = d.tensor((cout,), dist="normal", scale=0.5) if "b" in affine else None
    conv = [p.pop(a, dflt) for a, dflt in (("stride", 1), ("padding", 0), ("dilation", 1))]
    return Inputs((x, w, b, *conv, g, rm, rv, bw, bb), p)


TASK = Task(
    entry="fused_relu_batch_norm_conv2d",
    signature=(
        "fused_relu_batch_norm_conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, "
        "groups=1, running_mean=None, running_var=None, bn_weight=None, bn_bias=None, "
        "training=False, momentum=0.1, eps=1e-05, inplace=False)"
    ),
    description=(
        "conv2d, batch normalization and ReLU in sequence. Y = torch.nn.functional.conv2d("
        "input, weight, bias, stride, padding, dilation, groups) on a contiguous float32 NCHW "
        "`input` with `weight` float32 (C_out, C_in/groups, k, k) and `bias` float32 (C_out,) or "
        "None (int stride/padding/dilation for both spatial dims). Then batch norm per output "
        "channel c: (Y - mean_c) / sqrt(var_c + eps) * bn_weight_c + bn_bias_c (bn_weight / "
        "bn_bias float32 (C_out,) or None = 1 / 0). training=True: mean and var are the batch "
        "statistics of Y over (N, OH, OW) (biased variance) and running_mean / running_var, "
        "when given (float32 (C_out,)), are updated IN PLACE: r = (1 - momentum) r + momentum s "
        "with the unbiased variance; their final values are judged. training=False: the given "
        "running statistics are used (they are required then). Finally ReLU; `inplace` has no "
        "visible effect. Returns a new float32 (N, C_out, OH, OW) tensor. Cases cover both "
        "modes, training without running statistics, every affine combination, non-default "
        "momentum/eps, bias, stride 2, padding, dilation 2, groups 2 and depthwise."
    ),
    math=r"y = \max\Big(0,\ \frac{\mathrm{conv2d}(x) - \mu_c}{\sqrt{\sigma_c^2 + \epsilon}}"
    r"\gamma_c + \beta_c\Big)",
    precision=(
        "float32 in and out; the convolution accumulates in float32 and TF32 (or any "
        "reduced-mantissa input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee') or fp32 multiply-adds; statistics in float32 or "
        "wider with a stable (two-pass or Welford) variance. rtol=1e-4, atol=1e-5 on the output "
        "and the running statistics."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case(
            (4, 8, 17, 19),
            seed=1,
            params={"cout": 12, "k": 3, "bias": True, "padding": 1, "training": True},
        ),
        Case(
            (3, 6, 23, 21),
            seed=2,
            dist="outlier",
            params={"cout": 10, "k": 5, "stride": 2, "padding": 2, "affine": "wb"},
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
                "running": False,
                "affine": "b",
                "training": True,
            },
        ),
        Case(
            (2, 16, 20, 22),
            seed=4,
            params={
                "cout": 32,
                "k": 3,
                "stride": 2,
                "padding": 1,
                "groups": 16,
                "affine": "wb",
                "training": True,
                "momentum": 0.3,
                "eps": 1e-3,
            },
        ),
        Case((1, 9, 13, 11), seed=5, dist="outlier", params={"cout": 7, "k": 3, "affine": "w"}),
    ),
    bench=(
        Case(
            (64, 64, 112, 112),
            seed=11,
            params={"cout": 128, "k": 3, "padding": 1, "affine": "wb", "training": True},
        ),
        Case((64, 128, 56, 56), seed=12, params={"cout": 256, "k": 3, "padding": 1, "bias": True}),
    ),
    flops=lambda c: 2.0 * conv_numel(c) * contraction(c),
    bytes_moved=lambda c: (
        4.0
        * (
            c.shape[0] * c.shape[1] * math.prod(conv_in_hw(c))
            + c.params["cout"] * contraction(c)
            + conv_numel(c)
        )
    ),
    tolerance=Tolerance(rtol=1e-4, atol=1e-5),
    inplace=(7, 8),
)
