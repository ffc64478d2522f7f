"""Fusion/fused_add_mul_groupnorm: group_norm((x + y) * y) with broadcast y and affine params."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(input1, input2, weight, bias, num_groups, eps=1e-05, *, out=None):
    m = torch.mul(torch.add(input1, input2), input2)
    y = torch.nn.functional.group_norm(m, num_groups, weight=weight, bias=bias, eps=eps)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C, *spatial); params: groups, y ('full' | 'channel' | 'spatial'), y_shift,
    affine (False: weight and bias None), eps."""
    p = dict(case.params)
    n, c, *sp = case.shape
    d = Draw(case, device)
    x = d.tensor(case.shape)
    kind = p.pop("y", "full")
    yshape = {"full": case.shape, "channel": (c, *[1] * len(sp)), "spatial": tuple(sp)}[kind]
    y = d.tensor(yshape, shift=p.pop("y_shift", 0.0))
    affine = p.pop("affine", True)
    w = d.uniform((c,), 0.5, 1.5) if affine else None
    b = d.tensor((c,), dist="normal") if affine else None
    return Inputs((x, y, w, b, p.pop("groups")), p)


TASK = Task(
    entry="fused_add_mul_groupnorm",
    signature="fused_add_mul_groupnorm(input1, input2, weight, bias, num_groups, eps=1e-05, *, "
    "out=None)",
    description=(
        "Group normalization of M = (input1 + input2) * input2. `input1` is a contiguous "
        "float32 (N, C, L) or (N, C, H, W) tensor; `input2` a float32 tensor broadcastable to "
        "it: the same shape, per channel (C, 1[, 1]), or per position (L,) / (H, W). The C "
        "channels split into `num_groups` equal groups; each (sample, group) block of M is "
        "normalized by its own mean and biased variance: (M - mean) / sqrt(var + eps), then "
        "scaled by weight[c] and shifted by bias[c] (float32 (C,), or both None for no affine). "
        "Returns a new float32 tensor of input1's shape. Cases cover all three input2 layouts, "
        "1 group, C groups and in between, no affine, eps=1e-3, 3-D and 4-D inputs, and inputs "
        "whose M has a mean far from zero (punishing E[M^2] - E[M]^2 variances)."
    ),
    math=r"M = (X + Y) \odot Y,\quad O = \frac{M - \mu_{n,g}}{\sqrt{\sigma^2_{n,g} + \epsilon}}"
    r"\,\gamma_c + \beta_c",
    precision=(
        "float32 in and out; statistics accumulated in float32 (or wider) with a stable method "
        "(two passes or Welford); rtol=1e-5, atol=2e-5."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((3, 12, 17, 19), seed=1, params={"groups": 4}),
        Case((5, 6, 33), seed=2, dist="outlier", params={"groups": 3, "y": "channel"}),
        Case((2, 8, 9, 13), seed=3, dist="corner", params={"groups": 8, "y": "spatial"}),
        Case((4, 10, 7, 11), seed=4, params={"groups": 1, "affine": False, "eps": 1e-3}),
        Case((3, 16, 129), seed=5, params={"groups": 2, "y": "channel", "y_shift": 4.0}),
        Case((2, 9, 5, 23), seed=6, dist="outlier", params={"groups": 3, "y_shift": 3.0}),
    ),
    bench=(
        Case((32, 256, 64, 64), seed=11, params={"groups": 32}),
        Case((64, 128, 4096), seed=12, params={"groups": 16, "y": "channel"}),
    ),
    flops=lambda c: 10.0 * numel(c.shape),
    bytes_moved=lambda c: 4.0 * numel(c.shape) * (3 if c.params.get("y", "full") == "full" else 2),
    tolerance=Tolerance(rtol=1e-5, atol=2e-5),
)
