"""Fusion/fused_cross_entropy_softmax_layernorm: (cross_entropy(z, y), layer_norm(softmax(z)))."""

import torch
import torch.nn.functional as F

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(
    logits,
    targets,
    normalized_shape,
    weight=None,
    ignore_index=-100,
    reduction="mean",
    label_smoothing=0.0,
    eps=1e-05,
    *,
    out=None,
):
    loss = F.cross_entropy(
        logits,
        targets,
        weight=weight,
        ignore_index=ignore_index,
        reduction=reduction,
        label_smoothing=label_smoothing,
    )
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape
    o = F.layer_norm(F.softmax(logits, dim=-1), shape, eps=eps)
    if out is not None:
        out.copy_(o)
        o = out
    return loss, o


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C); params: scale, shift, probs (probability targets), ignored, weighted, norm
    ('int' | 'list') and call kwargs."""
    p = dict(case.params)
    n, c = case.shape
    d = Draw(case, device)
    logits = d.tensor(case.shape, scale=p.pop("scale", 1.0), shift=p.pop("shift", 0.0))
    if p.pop("probs", False):
        targets = torch.softmax(2 * d.tensor(case.shape, dist="normal"), dim=1)
    else:
        targets = d.integers((n,), 0, c)
        drop = d.uniform((n,), 0.0, 1.0, dtype=torch.float64) < p.pop("ignored", 0.0)
        targets = torch.where(drop, torch.full_like(targets, p.get("ignore_index", -100)), targets)
    if p.pop("weighted", False):
        p["weight"] = d.uniform((c,), 0.25, 2.0)
    norm = [c] if p.pop("norm", "int") == "list" else c
    return Inputs((logits, targets, norm), p)


TASK = Task(
    entry="fused_cross_entropy_softmax_layernorm",
    signature=(
        "fused_cross_entropy_softmax_layernorm(logits, targets, normalized_shape, weight=None, "
        "ignore_index=-100, reduction='mean', label_smoothing=0.0, eps=1e-05, *, out=None)"
    ),
    description=(
        "Two results from one pass over float32 logits (N, C): the cross-entropy loss "
        "F.cross_entropy(logits, targets, weight, ignore_index, reduction, label_smoothing) and "
        "the layer-normalized softmax probabilities F.layer_norm(softmax(logits, -1), "
        "normalized_shape, eps) without affine parameters; returns the tuple (loss, out). "
        "`targets` are int64 class indices (N,) (entries equal to ignore_index contribute "
        "nothing) or float32 class probabilities (N, C); `weight` is float32 (C,) or None. "
        "Per row (lp = log_softmax, w = weight or ones, e = label_smoothing): index target t: "
        "loss = (1-e) w_t (-lp_t) + e/C sum_c w_c (-lp_c); probabilities q: loss = -sum_c w_c "
        "((1-e) q_c + e/C) lp_c. reduction 'none' gives the (N,) losses (0 where ignored), "
        "'sum' their sum, 'mean' the sum divided by the sum of w_t over non-ignored rows (index "
        "targets) or by N (probabilities), as 0-d float32. `normalized_shape` is C or [C]: each "
        "row of probabilities p is mapped to (p - mean(p)) / sqrt(var(p) + eps) (biased "
        "variance); out is float32 (N, C). Cases cover all reductions, weights, ignored rows "
        "with -100 and a valid-class ignore_index, label smoothing, probability targets, "
        "eps=1e-3, both normalized_shape forms, logits up to ~1e4 in magnitude, and logits "
        "shifted by 1e4 (shift-invariance: use p = exp(x - max) / sum and log-probabilities "
        "(x - max) - log(sum); rounding max + log(sum) first loses ~1e-3 there). `out` is not "
        "passed."
    ),
    math=r"\ell_i = (1-\varepsilon)\,w_{t_i}(-\mathrm{lp}_{i t_i}) + \tfrac{\varepsilon}{C}"
    r"\sum_c w_c(-\mathrm{lp}_{ic}),\quad o_{ic} = \frac{p_{ic} - \bar p_i}"
    r"{\sqrt{\mathrm{Var}(p_i) + \epsilon}},\quad p = \mathrm{softmax}(z)",
    precision=(
        "float32 in and out; exponentials, sums, the log-sum-exp (maximum subtracted) and the "
        "row statistics in float32; rtol=1e-5, atol=1e-6 on both outputs."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((67, 1000), seed=1),
        Case(
            (129, 517),
            seed=2,
            dist="outlier",
            params={"scale": 30.0, "reduction": "none", "weighted": True, "norm": "list"},
        ),
        Case(
            (45, 333),
            seed=3,
            dist="corner",
            params={"ignored": 0.2, "reduction": "sum", "label_smoothing": 0.1, "eps": 1e-3},
        ),
        Case(
            (99, 257),
            seed=4,
            params={"weighted": True, "ignored": 0.3, "ignore_index": 7, "scale": 3.0},
        ),
        Case(
            (40, 129),
            seed=5,
            dist="outlier",
            params={"probs": True, "label_smoothing": 0.2, "weighted": True},
        ),
        Case(
            (7, 4099), seed=6, params={"scale": 10.0, "reduction": "sum", "label_smoothing": 0.05}
        ),
        Case((53, 129), seed=7, params={"shift": 1e4, "reduction": "none", "label_smoothing": 0.1}),
    ),
    bench=(
        Case((8192, 32000), seed=11, params={"ignored": 0.1}),
        Case((32768, 4096), seed=12, params={"weighted": True, "label_smoothing": 0.1}),
    ),
    flops=lambda c: 12.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
