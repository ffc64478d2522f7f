"""Fusion/fused_cross_entropy_log_softmax: cross_entropy(log_softmax(x)), all torch options."""

import torch
import torch.nn.functional as F

from kbx.suite.inputs import Draw, numel
from kbx.suite.moved import share
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(
    input, target, dim=1, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0
):
    log_probs = F.log_softmax(input, dim=dim)
    return F.cross_entropy(
        log_probs,
        target,
        weight=weight,
        ignore_index=ignore_index,
        reduction=reduction,
        label_smoothing=label_smoothing,
    )


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C) or (N, C, L); params: scale and shift of the logits, probs (probability
    targets), ignored (fraction of index targets set to ignore_index), weighted, call kwargs."""
    p = dict(case.params)
    n, c, *rest = case.shape
    d = Draw(case, device)
    logits = d.tensor(case.shape, scale=p.pop("scale", 1.0), shift=p.pop("shift", 0.0))
    if p.pop("probs", False):  # class probabilities, same shape as the logits
        target = torch.softmax(2 * d.tensor(case.shape, dist="normal"), dim=1)
    else:
        target = d.integers((n, *rest), 0, c)
        drop = d.uniform((n, *rest), 0.0, 1.0, dtype=torch.float64) < p.pop("ignored", 0.0)
        ignore = torch.full_like(target, p.get("ignore_index", -100))
        target = torch.where(drop, ignore, target)
    if p.pop("weighted", False):
        p["weight"] = d.uniform((c,), 0.25, 2.0)
    return Inputs((logits, target), p)


def _bytes(c: Case) -> float:
    """The logits of the rows not ignored, the targets and the loss: an ignored row is never
    read (index targets; probability targets read every logit and every probability)."""
    p = c.params
    rows = numel(c.shape) // c.shape[1]
    if p.get("probs"):
        logits, target = 4.0 * numel(c.shape), 4.0 * numel(c.shape)
    else:
        kept = share(1 - p.get("ignored", 0.0), rows)
        logits, target = 4.0 * numel(c.shape) * kept, 8.0 * rows
    return logits + target + (4.0 * rows if p.get("reduction") == "none" else 4.0)


TASK = Task(
    entry="fused_cross_entropy_log_softmax",
    signature=(
        "fused_cross_entropy_log_softmax(input: torch.Tensor, target: torch.Tensor, dim: int=1, "
        "weight: torch.Tensor=None, ignore_index: int=-100, reduction: str='mean', "
        "label_smoothing: float=0.0) -> torch.Tensor"
    ),
    description=(
        "Cross-entropy of log-softmax outputs: F.cross_entropy(F.log_softmax(input, dim), "
        "target, weight, ignore_index, reduction, label_smoothing). `input` is float32 logits "
        "(N, C) or (N, C, L) and `dim` is its class dim (1, or -1 for 2-D input); since "
        "log_softmax is idempotent the result equals cross_entropy(input, ...). `target` is "
        "either int64 class indices (N,) / (N, L), where entries equal to `ignore_index` "
        "contribute nothing, or float32 class probabilities of the input's shape. Per element "
        "(lp = log_softmax, w = `weight` or ones, eps = label_smoothing): index target t: "
        "loss = (1-eps) w_t (-lp_t) + eps/C sum_c w_c (-lp_c); probability target q: "
        "loss = -sum_c w_c ((1-eps) q_c + eps/C) lp_c. reduction 'none' returns the float32 "
        "(N,) / (N, L) losses (0 where ignored), 'sum' their sum, 'mean' the sum divided by the "
        "sum of w_t over non-ignored elements (index targets) or by N*L (probability targets), "
        "as 0-d float32. Cases cover all reductions, weights, ignored elements with -100 and a "
        "valid-class ignore_index, label smoothing, probability targets, (N, C, L) inputs, "
        "dim=-1, logits up to ~1e4 in magnitude, and logits shifted by 1e4 (shift-invariance: "
        "compute log-probabilities as (x - max) - log(sum exp(x - max)); rounding "
        "max + log(sum) first loses ~1e-3 there)."
    ),
    math=r"\ell_i = (1-\varepsilon)\,w_{t_i}(-\mathrm{lp}_{i t_i}) + \tfrac{\varepsilon}{C}"
    r"\sum_c w_c(-\mathrm{lp}_{ic}),\quad \mathrm{lp} = x - \log\sum_c e^{x_c}",
    precision=(
        "float32 in and out; exponentials, sums and the log-sum-exp in float32 with the maximum "
        "subtracted; rtol=1e-5, atol=1e-6 (any summation order passes)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((67, 1000), seed=1),
        Case(
            (129, 517),
            seed=2,
            dist="outlier",
            params={"scale": 30.0, "reduction": "none", "weighted": True},
        ),
        Case(
            (45, 333),
            seed=3,
            dist="corner",
            params={"ignored": 0.2, "reduction": "sum", "label_smoothing": 0.1},
        ),
        Case(
            (5, 33, 41), seed=4, params={"ignored": 0.3, "label_smoothing": 0.2, "weighted": True}
        ),
        Case(
            (31, 2049),
            seed=5,
            dist="outlier",
            params={
                "weighted": True,
                "ignored": 0.25,
                "ignore_index": 7,
                "reduction": "none",
                "label_smoothing": 0.05,
            },
        ),
        Case(
            (40, 257),
            seed=6,
            params={"probs": True, "weighted": True, "label_smoothing": 0.1, "dim": -1},
        ),
        Case((3, 19, 23), seed=7, dist="outlier", params={"probs": True, "reduction": "none"}),
        Case((53, 129), seed=8, params={"shift": 1e4, "reduction": "none", "label_smoothing": 0.1}),
        Case((37, 65), seed=9, dist="corner", params={"probs": True, "reduction": "none"}),
    ),
    bench=(
        Case((8192, 32000), seed=11, params={"ignored": 0.1, "label_smoothing": 0.1}),
        Case((4096, 32000), seed=12, params={"probs": True, "weighted": True}),
    ),
    flops=lambda c: 6.0 * numel(c.shape),
    bytes_moved=_bytes,
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
