"""Fusion/fused_hardsigmoid_batch_norm: hardsigmoid(batch_norm(x)); running stats updated."""

import torch.nn.functional as F

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(
    x,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training=False,
    momentum=0.1,
    eps=1e-05,
    inplace=False,
):
    y = F.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)
    return F.hardsigmoid(y, inplace=inplace)


def make_inputs(case: Case, device: str) -> Inputs:
    """params: the call's keywords, plus affine ('wb', 'w', 'b' or ''), channel_offset (spread of
    per-channel means) and wscale (weight magnitude, so that hardsigmoid's clamps are reached)."""
    p = dict(case.params)
    c = case.shape[1]
    d = Draw(case, device)
    bshape = (1, c) + (1,) * (len(case.shape) - 2)
    spread = p.pop("channel_offset", 0.0)
    x = d.tensor(case.shape) + d.uniform((c,), -spread, spread).reshape(bshape)
    rm = d.tensor((c,), dist="normal", scale=0.5)
    rv = d.uniform((c,), 0.5, 2.0)
    affine, wscale = p.pop("affine", "wb"), p.pop("wscale", 1.0)
    w = d.uniform((c,), 0.5 * wscale, 1.5 * wscale) if "w" in affine else None
    b = d.tensor((c,), dist="normal") if "b" in affine else None
    return Inputs((x, rm, rv, w, b), p)


TASK = Task(
    entry="fused_hardsigmoid_batch_norm",
    signature=(
        "fused_hardsigmoid_batch_norm(x: torch.Tensor, running_mean: torch.Tensor, running_var: "
        "torch.Tensor, weight: torch.Tensor=None, bias: torch.Tensor=None, training: bool=False, "
        "momentum: float=0.1, eps: float=1e-05, inplace: bool=False) -> torch.Tensor"
    ),
    description=(
        "Batch normalization followed by hardsigmoid. `x` is a contiguous float32 (N, C), "
        "(N, C, L) or (N, C, H, W) tensor; per channel c, z = (x - mean_c) / sqrt(var_c + eps) "
        "* weight_c + bias_c (weight, bias float32 (C,), 1 and 0 when None), then y = "
        "hardsigmoid(z) = min(max(z + 3, 0), 6) / 6. training=False: mean and var are the given "
        "float32 (C,) running_mean/running_var. training=True: they are the batch statistics "
        "over N and the spatial dims (biased variance), and running_mean/running_var are "
        "updated IN PLACE: r = (1 - momentum) r + momentum s, with the unbiased variance "
        "(n/(n-1)) for running_var. Returns y as a new float32 tensor; the final running_mean "
        "and running_var are judged too (`inplace` only concerns hardsigmoid's intermediate and "
        "is not exercised). Cases cover both modes, 2-D to 4-D inputs, no weight/bias, "
        "momentum 0.3 and eps 1e-3, large weights that reach both clamps, and per-channel means "
        "far from zero (up to ~30 standard deviations) that break E[x^2] - E[x]^2 variances."
    ),
    math=r"y = \frac{1}{6}\min\!\Big(\max\!\Big(\frac{x - \mu_c}{\sqrt{\sigma_c^2 + \epsilon}}"
    r"\gamma_c + \beta_c + 3,\ 0\Big),\ 6\Big)",
    precision=(
        "float32 in and out; statistics accumulated in float32 (or wider) with a stable method "
        "(two-pass or Welford); rtol=1e-5, atol=2e-6 on y and on the running statistics."
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
        Case((6, 3, 13, 7), seed=3, dist="corner", params={"wscale": 4.0}),
        Case((33, 12), seed=4, params={"training": True, "affine": "b", "wscale": 3.0}),
        Case((9, 6, 5, 23), seed=5, params={"training": True, "channel_offset": 30.0}),
        Case((5, 4, 29), seed=6, dist="outlier", params={"affine": "w", "wscale": 2.0}),
    ),
    bench=(
        Case((64, 256, 56, 56), seed=11, params={"training": True}),
        Case((256, 1024, 256), seed=12, params={"training": False}),
    ),
    flops=lambda c: 10.0 * numel(c.shape),
    # the input once, the output once: training's second pass over the input can hit the L2
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=2e-6),
    inplace=(1, 2),
)
