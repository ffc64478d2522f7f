"""Loss/smooth_l1_loss: Huber-style loss, quadratic below `beta` and linear above it."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(input, target, beta=1.0, reduction="mean"):
    return torch.nn.functional.smooth_l1_loss(input, target, beta=beta, reduction=reduction)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    x = draw.tensor(case.shape)
    y = draw.tensor(case.shape, dist="normal")
    return Inputs((x, y), dict(case.params))


TASK = Task(
    entry="smooth_l1_loss",
    signature="smooth_l1_loss(input, target, beta=1.0, reduction='mean')",
    description=(
        "Smooth L1 loss, as torch.nn.functional.smooth_l1_loss: `input` and `target` are "
        "float32 tensors of one shape (1-D to 4-D); with d = x - y the element loss is "
        "0.5 * d^2 / beta where |d| < beta and |d| - 0.5 * beta elsewhere; beta = 0 gives "
        "plain |d| (L1). reduction='none' returns the element losses, 'sum' their sum, 'mean' "
        "their sum divided by the element count (0-d float32). Cases: beta 1.0, 0.5, 2.0, 0.1 "
        "and 0.0, all three reductions, outliers and corner values in `input`."
    ),
    math=r"\ell_i = \begin{cases} 0.5 d_i^2/\beta & |d_i| < \beta \\ |d_i| - 0.5\beta & "
    r"\text{otherwise}\end{cases},\ d_i = x_i - y_i",
    precision=(
        "float32 in and out, computed and accumulated in float32; rtol=1e-5, atol=1e-6, any "
        "summation order (non-negative terms)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier", params={"beta": 0.5, "reduction": "none"}),
        Case((5, 63, 33), seed=3, dist="corner", params={"beta": 2.0, "reduction": "sum"}),
        Case((7, 9, 11, 13), seed=4, params={"beta": 0.0, "reduction": "none"}),
        Case((129, 65), seed=5, dist="corner", params={"beta": 0.1, "reduction": "none"}),
        Case((100003,), seed=6, dist="outlier", params={"beta": 0.0, "reduction": "mean"}),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((8192, 8192), seed=12, params={"beta": 0.5, "reduction": "none"}),
    ),
    flops=lambda c: 5.0 * numel(c.shape),
    bytes_moved=lambda c: (12.0 if c.params.get("reduction") == "none" else 8.0) * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
