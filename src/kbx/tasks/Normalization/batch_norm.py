"""Normalization/batch_norm: per-channel batch normalization, training or inference mode."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(
    input,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training=False,
    momentum=0.1,
    eps=1e-05,
):
    return torch.nn.functional.batch_norm(
        input, running_mean, running_var, weight, bias, training, momentum, eps
    )


def make_inputs(case: Case, device: str) -> Inputs:
    p = dict(case.params)
    c = case.shape[1]
    draw = Draw(case, device)
    x = draw.tensor(case.shape)
    spread = p.pop("channel_offset", 0.0)  # per-channel means far from zero
    offset = draw.uniform((c,), -spread, spread).reshape((1, c) + (1,) * (len(case.shape) - 2))
    x = x + offset
    stats = not p.pop("no_running", False)
    rm = draw.tensor((c,), dist="normal", scale=0.5) if stats else None
    rv = draw.uniform((c,), 0.5, 2.0) if stats else None
    affine = p.pop("affine", "wb")
    w = draw.uniform((c,), 0.5, 1.5) if "w" in affine else None
    b = draw.tensor((c,), dist="normal") if "b" in affine else None
    return Inputs((x, rm, rv, w, b), p)


TASK = Task(
    entry="batch_norm",
    signature="batch_norm(input, running_mean, running_var, weight=None, bias=None, "
    "training=False, momentum=0.1, eps=1e-05)",
    description=(
        "Batch normalization of a float32 `input` of shape (N, C, L) or (N, C, H, W), per channel "
        "c: y = (x - mean_c) / sqrt(var_c + eps) * weight_c + bias_c (weight and bias, float32 "
        "(C,), default to 1 and 0 when None). With training=False, mean and var are the given "
        "`running_mean`/`running_var` (float32 (C,)). With training=True they are the batch "
        "statistics over N and the spatial dims (biased variance), and running_mean/running_var, "
        "when not None, are updated IN PLACE: r = (1 - momentum) * r + momentum * s, using the "
        "unbiased (n/(n-1)) variance for running_var. Returns y; the final running_mean and "
        "running_var are judged too. Cases cover both modes, with and without weight/bias, "
        "training without running stats (None), non-default momentum/eps, and per-channel means "
        "far from zero (up to ~30 standard deviations) that punish E[x^2] - E[x]^2 variance."
    ),
    math=r"y = \frac{x - \mu_c}{\sqrt{\sigma_c^2 + \epsilon}}\gamma_c + \beta_c,\quad "
    r"\hat r \leftarrow (1-m)\,\hat r + m\,s",
    precision=(
        "float32 in and out; statistics accumulated in float32 (or wider) with a numerically "
        "stable method (two-pass or Welford); tolerance rtol=1e-5, atol=1e-5 (the output is a "
        "difference x - mean that carries the mean's rounding, ~1e-6 of |x|)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((17, 5, 33), seed=1, params={"training": True}),
        Case(
            (8, 7, 9, 11),
            seed=2,
            dist="outlier",
            params={"training": True, "affine": "", "momentum": 0.3, "eps": 1e-3},
        ),
        Case((6, 3, 13, 7), seed=3, dist="corner", params={"training": False}),
        Case((33, 12, 29), seed=4, params={"affine": "b"}),
        Case((5, 4, 7, 9), seed=5, params={"training": True, "no_running": True, "affine": "w"}),
        Case((9, 6, 5, 23), seed=6, params={"training": True, "channel_offset": 30.0}),
    ),
    bench=(
        Case((64, 256, 64, 64), seed=11, params={"training": True}),
        Case((256, 1024, 256), seed=12, params={"training": False}),
    ),
    flops=lambda c: 8.0 * numel(c.shape),
    # the input once, the output once: training's second pass over the input can hit the L2
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-5),
    inplace=(1, 2),
)
