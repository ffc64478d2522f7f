"""Fusion/fused_sigmoid_batch_norm: sigmoid(batch_norm(x)), training or inference statistics."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(
    input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5
):
    y = torch.nn.functional.batch_norm(
        input, running_mean, running_var, weight, bias, training, momentum, eps
    )
    return torch.sigmoid(y)


def make_inputs(case: Case, device: str) -> Inputs:
    """params: training, momentum, eps, affine ('wb', 'w', 'b' or ''), no_running (None
    statistics), offset (per-channel means spread over [-offset, offset])."""
    p = dict(case.params)
    c = case.shape[1]
    d = Draw(case, device)
    x = d.tensor(case.shape)
    spread = p.pop("offset", 0.0)
    x = x + d.uniform((c,), -spread, spread).reshape((1, c) + (1,) * (len(case.shape) - 2))
    running = not p.pop("no_running", False)
    rm = d.tensor((c,), dist="normal", scale=0.5) if running else None
    rv = d.uniform((c,), 0.5, 2.0) if running else None
    affine = p.pop("affine", "wb")
    w = d.uniform((c,), 0.5, 2.0) if "w" in affine else None
    b = d.tensor((c,), dist="normal") if "b" in affine else None
    return Inputs((x, rm, rv, w, b), p)


TASK = Task(
    entry="fused_sigmoid_batch_norm",
    signature=(
        "fused_sigmoid_batch_norm(input, running_mean, running_var, weight=None, bias=None, "
        "training=False, momentum=0.1, eps=1e-05)"
    ),
    description=(
        "Batch normalization followed by a sigmoid: out = sigmoid((x - mean_c) / sqrt(var_c + "
        "eps) * weight_c + bias_c) for a float32 `input` of shape (N, C), (N, C, L) or "
        "(N, C, H, W), channel c = dim 1; weight and bias are float32 (C,) or None (1 and 0). "
        "training=False: mean and var are the given running_mean / running_var (float32 (C,)). "
        "training=True: they are the batch statistics over all dims but 1 (biased variance), "
        "and running_mean / running_var, when not None, are updated IN PLACE: "
        "r = (1 - momentum) r + momentum s, with the unbiased variance (count/(count-1)) for "
        "running_var; their final values are judged too. Returns a new float32 tensor of the "
        "input's shape. Cases cover both modes, 2-D to 4-D inputs, missing weight and/or bias, "
        "training without running statistics (None), non-default momentum and eps, and "
        "per-channel means up to ~20 standard deviations from zero (punishes the one-pass "
        "E[x^2] - E[x]^2 variance)."
    ),
    math=r"y = \sigma\Big(\frac{x - \mu_c}{\sqrt{\sigma_c^2 + \epsilon}}\gamma_c + \beta_c\Big),"
    r"\quad \hat r \leftarrow (1-m)\,\hat r + m\,s",
    precision=(
        "float32 in and out; statistics accumulated in float32 (or wider) with a stable method "
        "(two-pass or Welford); rtol=1e-5, atol=2e-6 on the output and the running statistics."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((17, 5, 33), seed=1, params={"training": True}),
        Case((37, 11), seed=2, dist="outlier", params={"training": True, "momentum": 0.3}),
        Case((6, 3, 13, 7), seed=3, dist="corner", params={"affine": "b"}),
        Case((33, 12, 29), seed=4, params={"affine": "w", "eps": 1e-3}),
        Case((5, 4, 7, 9), seed=5, params={"training": True, "no_running": True, "affine": ""}),
        Case((9, 6, 5, 23), seed=6, params={"training": True, "offset": 20.0}),
    ),
    bench=(
        Case((64, 256, 64, 64), seed=11, params={"training": True}),
        Case((256, 1024, 256), seed=12, params={"training": False}),
    ),
    flops=lambda c: 10.0 * numel(c.shape),
    # the input once, the output once: training's second pass over the input can hit the L2
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=2e-6),
    inplace=(1, 2),
)
