"""Loss/nll_loss: negative log-likelihood of class-index targets, with weights and ignore_index."""

import torch

from kbx.suite.derived import wide
from kbx.suite.inputs import Draw, numel
from kbx.suite.moved import share
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(input, target, weight=None, ignore_index=-100, reduction="mean"):
    return torch.nn.functional.nll_loss(
        input, target, weight=weight, ignore_index=ignore_index, reduction=reduction
    )


def make_inputs(case: Case, device: str) -> Inputs:
    p = dict(case.params)
    draw = Draw(case, device)
    n, c, *rest = case.shape
    logits = draw.tensor(case.shape, dtype=wide(case.shape), scale=p.pop("scale", 1.0))
    x = torch.log_softmax(logits, dim=1).float().to(device)  # log-probabilities over dim 1
    target = draw.integers((n, *rest), 0, c)
    drop = draw.uniform((n, *rest), 0.0, 1.0, dtype=torch.float64) < p.pop("ignored", 0.0)
    ignore = p.get("ignore_index", -100)
    target = torch.where(drop, torch.full_like(target, ignore), target)
    if p.pop("weighted", False):
        p["weight"] = draw.uniform((c,), 0.25, 2.0)
    return Inputs((x, target), p)


def _positions(c: Case) -> int:
    return numel(c.shape) // c.shape[1]


def _bytes(c: Case) -> float:
    """Per position: its target and, unless ignored, the one log-probability it picks; the loss
    per position or reduced (a lower bound: a gathered float costs a whole 32-byte sector)."""
    n = _positions(c)
    kept = share(1 - c.params.get("ignored", 0.0), n)
    out = 4.0 * n if c.params.get("reduction") == "none" else 4.0
    return n * (4.0 * kept + 8.0) + out


TASK = Task(
    entry="nll_loss",
    signature="nll_loss(input, target, weight=None, ignore_index=-100, reduction='mean')",
    description=(
        "Negative log-likelihood loss, as torch.nn.functional.nll_loss: `input` is float32 "
        "log-probabilities of shape (N, C) or (N, C, d) (classes along dim 1) and `target` int64 "
        "class indices of shape (N,) or (N, d). The loss at position i is -w[t_i] * "
        "input[i, t_i] with w = `weight` (float32 (C,), or ones); positions whose target equals "
        "`ignore_index` contribute 0 and no weight. reduction='none' returns the per-position "
        "losses (shape of target), 'sum' their sum and 'mean' their sum divided by the sum of "
        "w[t_i] over kept positions (0-d float32). Cases: 2-D and 3-D inputs, with and without "
        "weight, ignored positions marked -100 or by a non-default ignore_index that is a valid "
        "class, all three reductions."
    ),
    math=r"\ell_i = -w_{t_i} x_{i,t_i},\quad \mathrm{mean} = \sum_i \ell_i / "
    r"\sum_{i\,\mathrm{kept}} w_{t_i}",
    precision=(
        "float32 log-probabilities, int64 targets, float32 out; sums in float32 in any order; "
        "rtol=1e-5, atol=1e-6."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((67, 1000), seed=1),
        Case((129, 517), seed=2, dist="outlier", params={"scale": 30.0, "reduction": "none"}),
        Case((45, 333), seed=3, params={"ignored": 0.2, "reduction": "sum", "weighted": True}),
        Case((9, 21, 37), seed=4, params={"weighted": True, "ignored": 0.3}),
        Case(
            (7, 5, 131),
            seed=5,
            dist="outlier",
            params={"weighted": True, "ignored": 0.25, "ignore_index": 3, "reduction": "none"},
        ),
        Case((301, 13), seed=6, params={"ignored": 0.1, "ignore_index": 0, "reduction": "mean"}),
    ),
    bench=(
        Case((1 << 21, 128), seed=11, params={"ignored": 0.1}),
        Case((16, 19, 512, 512), seed=12, params={"weighted": True, "reduction": "none"}),
    ),
    flops=lambda c: 2.0 * _positions(c),
    # per position: the int64 target, one gathered 32-byte sector of input, the weight, output
    bytes_moved=_bytes,
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
