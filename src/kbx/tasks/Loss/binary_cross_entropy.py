"""Loss/binary_cross_entropy: BCE of probabilities against targets, logs clamped at -100."""

import torch

from kbx.suite.derived import wide
from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# logits whose sigmoid is exactly 0 or 1 in float32, or within a few ulps of them
LOGIT_SPECIALS = (float("-inf"), float("inf"), -120.0, 40.0, -40.0, 16.0, -16.0, 0.0)


def reference(input, target, weight=None, reduction="mean"):
    return torch.nn.functional.binary_cross_entropy(
        input, target, weight=weight, reduction=reduction
    )


def make_inputs(case: Case, device: str) -> Inputs:
    p = dict(case.params)
    draw = Draw(case, device)
    logits = draw.tensor(case.shape, dtype=wide(case.shape), specials=LOGIT_SPECIALS, scale=3.0)
    x = torch.sigmoid(logits).float()
    if p.pop("soft", False):
        y = draw.uniform(case.shape, 0.0, 1.0)
    else:
        y = (draw.uniform(case.shape, 0.0, 1.0, dtype=torch.float64) < 0.5).float()
    wshape = p.pop("weight", None)
    if wshape is not None:
        p["weight"] = draw.uniform(wshape, 0.25, 2.0)
    return Inputs((x.to(device), y), p)


TASK = Task(
    entry="binary_cross_entropy",
    signature="binary_cross_entropy(input, target, weight=None, reduction='mean')",
    description=(
        "Binary cross-entropy, as torch.nn.functional.binary_cross_entropy: `input` holds "
        "probabilities in [0, 1] and `target` values in [0, 1] (float32, same shape, 1-D to "
        "3-D); the element loss is -w * (y * max(log x, -100) + (1 - y) * max(log(1 - x), "
        "-100)), each log clamped at -100 so that x = 0 or 1 gives a finite loss (100 per "
        "unit weight when the target disagrees). `weight` is None (w = 1) or a float32 tensor "
        "broadcastable to the input (full shape or the last dim only). reduction='none' returns "
        "the element losses, 'sum' their sum, 'mean' their sum divided by the element count "
        "(0-d float32). Cases: hard 0/1 and soft targets, probabilities exactly 0 and 1 and "
        "within a few ulps of them, all three reductions, with and without weight."
    ),
    math=r"\ell_i = -w_i\left[y_i \max(\log x_i, -100) + (1-y_i)\max(\log(1-x_i), -100)\right]",
    precision=(
        "float32 in and out, computed and accumulated in float32 (log1p(-x) or log(1 - x) "
        "both fit); rtol=1e-5, atol=1e-6, any summation order."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, dist="corner"),
        Case((37, 1023), seed=2, dist="corner", params={"reduction": "none", "soft": True}),
        Case((129, 65), seed=3, dist="outlier", params={"reduction": "sum", "weight": (65,)}),
        Case((5, 63, 33), seed=4, dist="corner", params={"weight": (5, 63, 33), "soft": True}),
        Case((511, 17), seed=5, params={"reduction": "none", "weight": (511, 17)}),
        Case((3, 301, 7), seed=6, dist="corner", params={"reduction": "sum", "soft": True}),
    ),
    bench=(
        Case((8192, 8192), seed=11),
        Case((4096, 16384), seed=12, params={"reduction": "none", "weight": (4096, 16384)}),
    ),
    flops=lambda c: 8.0 * numel(c.shape),
    bytes_moved=lambda c: (
        8.0 * numel(c.shape)
        + 4.0 * numel(c.params.get("weight", ()) or (0,))
        + (4.0 * numel(c.shape) if c.params.get("reduction") == "none" else 4.0)
    ),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
