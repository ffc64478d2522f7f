"""Loss/kl_div: pointwise KL divergence of log-probabilities against (log-)probabilities."""

import torch

from kbx.suite.derived import wide
from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(input, target, reduction="batchmean", log_target=False):
    return torch.nn.functional.kl_div(input, target, reduction=reduction, log_target=log_target)


def make_inputs(case: Case, device: str) -> Inputs:
    p = dict(case.params)
    scale = p.pop("scale", 1.0)
    draw = Draw(case, device)
    # rows along the last dim are distributions; large logit scales push probabilities to 0
    q = draw.tensor(case.shape, dtype=wide(case.shape), scale=scale)
    t = draw.tensor(case.shape, dtype=wide(case.shape), scale=scale, dist="normal")
    x = torch.log_softmax(q, dim=-1)
    y = torch.log_softmax(t, dim=-1) if p.get("log_target") else torch.softmax(t, dim=-1)
    return Inputs((x.float().to(device), y.float().to(device)), p)


TASK = Task(
    entry="kl_div",
    signature="kl_div(input, target, reduction='batchmean', log_target=False)",
    description=(
        "KL-divergence loss, as torch.nn.functional.kl_div: `input` holds log-probabilities "
        "and `target` probabilities (log_target=False) or log-probabilities (log_target=True), "
        "float32 tensors of one shape (2-D or 3-D, distributions along the last dim). The "
        "element loss is y * (log y - x), taken as 0 where y = 0 (log_target=False), or "
        "exp(y) * (y - x) (log_target=True). reduction='none' returns the element losses, "
        "'sum' their sum, 'mean' their sum divided by the element count and 'batchmean' their "
        "sum divided by input.size(0), as 0-d float32. Cases: both log_target settings, all four "
        "reductions, and logit scales up to 200 so that many target probabilities are exactly 0 "
        "(or their logs very negative)."
    ),
    math=r"\ell_i = y_i(\log y_i - x_i)\ \text{or}\ e^{y_i}(y_i - x_i),\quad "
    r"\mathrm{batchmean} = \tfrac{1}{N}\sum_i \ell_i",
    precision=(
        "float32 in and out, computed and accumulated in float32; rtol=1e-5, atol=1e-6, any "
        "summation order."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 1023), seed=1),
        Case((129, 65), seed=2, dist="outlier", params={"reduction": "none"}),
        Case((5, 63, 33), seed=3, params={"reduction": "sum", "log_target": True}),
        Case((61, 257), seed=4, params={"reduction": "none", "log_target": True, "scale": 5.0}),
        Case((33, 129), seed=5, params={"reduction": "mean", "scale": 200.0}),
        Case((7, 11, 301), seed=9, dist="outlier", params={"log_target": True, "scale": 3.0}),
        Case((45, 77), seed=7, params={"reduction": "none", "scale": 8.0}),
    ),
    bench=(
        Case((8192, 8192), seed=11),
        Case((4096, 16384), seed=12, params={"reduction": "none", "log_target": True}),
    ),
    flops=lambda c: 4.0 * numel(c.shape),
    bytes_moved=lambda c: (12.0 if c.params.get("reduction") == "none" else 8.0) * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
