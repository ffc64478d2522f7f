"""Fusion/fused_silu_layer_norm_conv2d: silu(layer_norm(conv2d(x)) * weight), LN over (C, H, W)."""

import math

import torch.nn.functional as F

from kbx.suite.inputs import Draw
from kbx.suite.shapes import contraction, conv_hw, conv_in_hw, conv_numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)  # huge values would let fp32 summation order decide


def reference(
    x,
    weight,
    conv_weight,
    conv_bias=None,
    conv_stride=1,
    conv_padding=0,
    conv_dilation=1,
    conv_groups=1,
    ln_eps=1e-05,
):
    y = F.conv2d(x, conv_weight, conv_bias, conv_stride, conv_padding, conv_dilation, conv_groups)
    z = F.layer_norm(y, y.shape[1:], eps=ln_eps)
    scale = weight.reshape(-1, 1, 1) if weight.dim() == 1 else weight
    return F.silu(z * scale)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C_in, H, W); params: cout, k, bias, full_weight (weight of the normalized
    shape (C_out, OH, OW) instead of per channel) and the call's conv_* and ln_eps arguments."""
    p = dict(case.params)
    cout, k, full = p.pop("cout"), p.pop("k"), p.pop("full_weight", False)
    cin_g = case.shape[1] // p.get("conv_groups", 1)
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS)
    weight = d.uniform((cout, *conv_hw(case, "conv_")) if full else (cout,), 0.5, 3.0)
    cw = d.tensor((cout, cin_g, k, k), dist="normal", scale=(cin_g * k * k) ** -0.5)
    cb = d.tensor((cout,), dist="normal") if p.pop("bias", False) else None
    return Inputs((x, weight, cw, cb), p)


TASK = Task(
    entry="fused_silu_layer_norm_conv2d",
    signature=(
        "fused_silu_layer_norm_conv2d(x: torch.Tensor, weight: torch.Tensor, "
        "conv_weight: torch.Tensor, conv_bias: torch.Tensor=None, conv_stride: int=1, "
        "conv_padding: int=0, conv_dilation: int=1, conv_groups: int=1, "
        "ln_eps: float=1e-05) -> torch.Tensor"
    ),
    description=(
        "conv2d, then layer normalization over each sample's whole (C_out, OH, OW) output, "
        "then a scale by `weight` and SiLU. Y = torch.nn.functional.conv2d(x, conv_weight, "
        "conv_bias, conv_stride, conv_padding, conv_dilation, conv_groups) on a contiguous "
        "float32 NCHW `x` with conv_weight float32 (C_out, C_in/groups, k, k) and conv_bias "
        "float32 (C_out,) or None (int stride/padding/dilation for both spatial dims). "
        "Z = (Y - mean_n) / sqrt(var_n + ln_eps), with mean and biased variance over all "
        "C_out * OH * OW values of sample n (F.layer_norm(Y, Y.shape[1:]), no affine). Then "
        "out = silu(Z * weight) with silu(v) = v * sigmoid(v); `weight` is float32 and either "
        "per channel, shape (C_out,) (broadcast over OH, OW), or of the full normalized shape "
        "(C_out, OH, OW). Returns a new float32 (N, C_out, OH, OW) tensor. Cases cover both "
        "weight shapes, conv bias, stride 2, padding, dilation 2, groups 2, depthwise and a "
        "non-default ln_eps."
    ),
    math=r"\mathrm{out} = \mathrm{SiLU}\Big(\gamma \odot \frac{Y - \mu_n}{\sqrt{\sigma_n^2 + "
    r"\epsilon}}\Big),\quad Y = \mathrm{conv2d}(x)",
    precision=(
        "float32 in and out; the convolution accumulates in float32 and TF32 (or any "
        "reduced-mantissa input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee') or fp32 multiply-adds; statistics in float32 or "
        "wider with a stable (two-pass or Welford) variance. rtol=1e-4, atol=1e-5."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 8, 17, 19), seed=1, params={"cout": 12, "k": 3, "bias": True, "conv_padding": 1}),
        Case(
            (3, 6, 23, 21),
            seed=2,
            dist="outlier",
            params={"cout": 10, "k": 5, "conv_stride": 2, "conv_padding": 2, "full_weight": True},
        ),
        Case(
            (2, 12, 15, 13),
            seed=3,
            dist="corner",
            params={
                "cout": 16,
                "k": 3,
                "bias": True,
                "conv_padding": 2,
                "conv_dilation": 2,
                "conv_groups": 2,
                "ln_eps": 1e-2,
            },
        ),
        Case(
            (2, 16, 20, 22),
            seed=4,
            params={"cout": 32, "k": 3, "conv_stride": 2, "conv_padding": 1, "conv_groups": 16},
        ),
        Case(
            (1, 9, 13, 11), seed=5, dist="outlier", params={"cout": 7, "k": 1, "full_weight": True}
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
            params={"cout": 256, "k": 3, "conv_padding": 1, "full_weight": True},
        ),
    ),
    flops=lambda c: 2.0 * conv_numel(c, "conv_") * contraction(c, "conv_"),
    bytes_moved=lambda c: (
        4.0
        * (
            c.shape[0] * c.shape[1] * math.prod(conv_in_hw(c, "conv_"))
            + c.params["cout"] * contraction(c, "conv_")
            + conv_numel(c, "conv_")
        )
    ),
    tolerance=Tolerance(rtol=1e-4, atol=1e-5),
)
