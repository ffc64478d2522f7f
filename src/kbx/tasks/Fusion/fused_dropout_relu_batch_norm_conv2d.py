"""Fusion/fused_dropout_relu_batch_norm_conv2d: dropout(relu(batch_norm(conv2d(x)))), random."""

import math

import torch
import torch.nn.functional as F

from kbx.suite.checks import off_rate, pairs_agree
from kbx.suite.inputs import Draw
from kbx.suite.shapes import contraction, conv_geometry, conv_in_hw, conv_numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)  # huge values would let fp32 summation order decide
TOL = Tolerance(rtol=1e-4, atol=1e-4)  # on relu(bn(conv)); kept values: atol / (1 - p)
CALL_ARGS = ("stride", "padding", "dilation", "groups", "p")


def reference(
    input,
    weight,
    bias=None,
    stride=1,
    padding=0,
    dilation=1,
    groups=1,
    p=0.5,
    training=True,
    inplace=False,
):
    x = F.conv2d(input, weight, bias, stride, padding, dilation, groups)
    x = F.batch_norm(x, None, None, training=True)  # no running stats: always batch statistics
    return F.dropout(F.relu(x), p=p, training=training)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C_in, H, W); params: cout, k, bias and the call's arguments."""
    q = case.params
    n, cin, h, w = case.shape
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS)
    weight = d.tensor((q["cout"], cin // q.get("groups", 1), q["k"], q["k"]), dist="normal")
    bias = d.tensor((q["cout"],), dist="normal", scale=3.0) if q.get("bias") else None
    return Inputs((x, weight, bias), {"training": True, **{a: q[a] for a in CALL_ARGS if a in q}})


def check(inputs: Inputs, got: torch.Tensor) -> str | None:
    x, w, b = (t.double() if t is not None else None for t in inputs.args)
    kw = {k: v for k, v in inputs.kwargs.items() if k not in ("p", "training")}
    p = inputs.kwargs.get("p", 0.5)
    z = F.batch_norm(F.conv2d(x, w, b, **kw), None, None, training=True)
    kept = F.relu(z) / (1 - p)  # float64 value of a kept element
    g = got.to(kept.device).double()
    atol = TOL.atol / (1 - p)
    dropped = g.abs() <= atol
    bad = ~(dropped | ((g - kept).abs() <= atol + TOL.rtol * kept.abs()))  # NaN lands here
    if bad.any():
        err = torch.where(bad, (g - kept).abs().nan_to_num(math.inf), 0.0)
        i = tuple(int(v) for v in torch.unravel_index(err.argmax(), g.shape))
        return (
            f"{int(bad.sum())}/{g.numel()} elements are neither 0 (dropped) nor "
            f"relu(bn(conv))/(1-p) (kept, rtol={TOL.rtol:g} atol={atol:.3g}); worst at {i}: "
            f"got {g[i].item():.6g}, kept value {kept[i].item():.6g}"
        )
    clear = kept > 4 * atol  # dropped and kept are distinguishable (relu's zeros are not)
    reason = off_rate(dropped[clear], p, "distinguishable elements are dropped")
    for dim, name in enumerate(("images", "channels", "rows", "columns")):
        # disjoint pairs along dim agree as often as independent draws: no repeated masks
        if reason is None:
            reason = pairs_agree(dropped.movedim(dim, 0), clear.movedim(dim, 0), p, name)
    return reason


TASK = Task(
    entry="fused_dropout_relu_batch_norm_conv2d",
    signature=(
        "fused_dropout_relu_batch_norm_conv2d(input: torch.Tensor, weight: torch.Tensor, "
        "bias: torch.Tensor=None, stride: int=1, padding: int=0, dilation: int=1, groups: int=1, "
        "p: float=0.5, training: bool=True, inplace: bool=False) -> torch.Tensor"
    ),
    description=(
        "conv2d, batch normalization, ReLU and dropout in sequence. Y = conv2d(input, weight, "
        "bias, stride, padding, dilation, groups) as torch.nn.functional.conv2d, with `input` a "
        "contiguous float32 (N, C_in, H, W), `weight` (C_out, C_in/groups, k, k), `bias` (C_out,) "
        "or None, int stride/padding/dilation. Batch norm uses the batch statistics of Y per "
        "channel (mean and biased variance over N, OH, OW; eps=1e-5; no affine, no running "
        "stats), also when training=False (the released task crashed there: eval mode without "
        "running stats is an error in PyTorch). Then R = relu(BN(Y)) and dropout(R, p): each "
        "element zeroed with probability p, survivors scaled by 1/(1-p). Returns a new float32 "
        "(N, C_out, OH, OW) tensor. Every case uses training=True with p in {0.2, 0.5, 0.3}; "
        "training=False (no dropout) and inplace are accepted but not exercised. The mask cannot "
        "match PyTorch's random bits: draw the kernel's seed from torch's default generator (e.g. "
        "seed = int(torch.randint(0, 2**31 - 1, (1,)))), so that the same torch.manual_seed gives "
        "a bit-identical output and another seed another mask. Dropout is the last step, so each "
        "element must be 0 or relu(BN(Y))/(1-p) computed in float64; among elements with a "
        "clearly positive kept value the dropped fraction must be p within 5 binomial sigma, and "
        "neighbouring images, channels, rows and columns must not share decisions more than "
        "chance. Cases cover bias, stride 2, padding, dilation 2, groups 2 and depthwise."
    ),
    math=r"O = \tfrac{m}{1-p} \odot \max\!\left(0, \frac{Y - \mu_c}{\sqrt{\sigma_c^2 + 10^{-5}}}"
    r"\right),\quad m \sim \mathrm{Bernoulli}(1-p)",
    precision=(
        "float32 in and out; the convolution accumulates in float32 and TF32 (or any "
        "reduced-mantissa input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee') or fp32 multiply-adds; statistics in float32 (or "
        "wider) with a stable (two-pass or Welford) variance. Kept elements must match the "
        "float64 value within rtol=1e-4, atol=1e-4/(1-p)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4, 8, 17, 19), seed=1, params={"cout": 12, "k": 3, "bias": True, "padding": 1}),
        Case(
            (3, 6, 23, 21),
            seed=2,
            dist="outlier",
            params={"cout": 10, "k": 5, "stride": 2, "padding": 2, "p": 0.2},
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
                "p": 0.3,
            },
        ),
        Case(
            (2, 16, 20, 22),
            seed=4,
            params={"cout": 32, "k": 5, "bias": True, "stride": 2, "padding": 1, "groups": 16},
        ),
    ),
    bench=(
        Case(
            (64, 64, 112, 112),
            seed=11,
            params={"cout": 128, "k": 3, "bias": True, "padding": 1, "p": 0.2},
        ),
        Case((32, 128, 56, 56), seed=12, params={"cout": 256, "k": 3, "padding": 1}),
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
    tolerance=TOL,
    check=check,
    random=True,
    version=2,  # masks judged at distances 1 to 4 along each dim, not 1 alone (2026-12-06)
)
