"""Loss/mse_loss: squared error of two float32 tensors, element-wise, summed or averaged."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(input, target, reduction="mean"):
    return torch.nn.functional.mse_loss(input, target, reduction=reduction)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    x = draw.tensor(case.shape)
    y = draw.tensor(case.shape, dist="normal", scale=case.params.get("scale", 1.0))
    return Inputs((x, y), {k: v for k, v in case.params.items() if k != "scale"})


TASK = Task(
    entry="mse_loss",
    signature="mse_loss(input, target, reduction='mean')",
    description=(
        "Mean squared error, as torch.nn.functional.mse_loss: `input` and `target` are float32 "
        "tensors of one shape (1-D to 4-D); the element loss is (x - y)^2. reduction='none' "
        "returns the element losses (same shape), 'sum' their sum and 'mean' their sum divided "
        "by the element count, as 0-d float32 tensors. Cases: all three reductions, outliers, "
        "and corner values (zeros, signed zeros, +-1e4, tiny values) in `input`."
    ),
    math=r"\ell_i = (x_i - y_i)^2,\quad \mathrm{mean} = \tfrac{1}{n}\sum_i \ell_i",
    precision=(
        "float32 in and out, computed and accumulated in float32; rtol=1e-5, atol=1e-6, any "
        "summation order (the terms are non-negative, so the sum is well conditioned)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier", params={"reduction": "none"}),
        Case((5, 63, 33), seed=3, dist="corner", params={"reduction": "sum"}),
        Case((7, 9, 11, 13), seed=4, dist="corner", params={"reduction": "none"}),
        Case((129, 65), seed=5, dist="outlier", params={"reduction": "mean", "scale": 0.01}),
        Case((100003,), seed=6, params={"reduction": "sum"}),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((8192, 8192), seed=12, params={"reduction": "none"}),
    ),
    flops=lambda c: 3.0 * numel(c.shape),
    bytes_moved=lambda c: (12.0 if c.params.get("reduction") == "none" else 8.0) * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
