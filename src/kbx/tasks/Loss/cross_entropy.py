"""Loss/cross_entropy: softmax cross-entropy of (N, C) logits with class-index targets."""

import torch

from kbx.suite.inputs import Draw
from kbx.suite.moved import share
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(input, target, weight=None, ignore_index=-100, reduction="mean"):
    return torch.nn.functional.cross_entropy(
        input, target, weight=weight, ignore_index=ignore_index, reduction=reduction
    )


def make_inputs(case: Case, device: str) -> Inputs:
    n, c = case.shape
    p = dict(case.params)
    draw = Draw(case, device)
    logits = draw.tensor((n, c), scale=p.pop("scale", 1.0))
    target = draw.integers((n,), 0, c)
    ignore = p.get("ignore_index", -100)
    drop = draw.uniform((n,), 0.0, 1.0, dtype=torch.float64) < p.pop("ignored", 0.0)
    target = torch.where(drop, torch.full_like(target, ignore), target)  # some rows ignored
    if p.pop("weighted", False):
        p["weight"] = draw.uniform((c,), 0.25, 2.0)
    return Inputs((logits, target), p)


def cases_bytes(c: Case) -> float:
    """The logits of the rows not ignored (an ignored row is never read), the targets, the loss;
    the weights the targets pick are left out (at most C floats)."""
    n, k = c.shape
    kept = share(1 - c.params.get("ignored", 0.0), n)
    out = 4.0 * n if c.params.get("reduction") == "none" else 4.0
    return 4.0 * n * k * kept + 8.0 * n + out


TASK = Task(
    entry="cross_entropy",
    signature="cross_entropy(input, target, weight=None, ignore_index=-100, reduction='mean')",
    description=(
        "Cross-entropy loss of float32 logits `input` (N, C) against int64 class indices `target` "
        "(N,): loss_i = w[t_i] * (logsumexp_j x_ij - x_{i,t_i}), with w = `weight` (float32 (C,), "
        "or all ones when None). Rows whose target equals `ignore_index` contribute nothing (and "
        "give 0 with reduction='none'). reduction='none' returns the (N,) per-row losses, 'sum' "
        "their sum and 'mean' the sum divided by the sum of w[t_i] over non-ignored rows, each as "
        "float32 (0-d for 'sum' and 'mean'). Cases mix all three reductions, with and without "
        "`weight`, ignored rows marked -100 or a non-default `ignore_index` that is a valid class, "
        "and logits with magnitudes up to ~1e4, so the log-sum-exp must be computed stably "
        "(subtract the row maximum)."
    ),
    math=r"\ell_i = w_{t_i}\left(\log\sum_j e^{x_{ij}} - x_{i t_i}\right),\quad "
    r"\mathrm{mean} = \sum_i \ell_i / \sum_{i\,\mathrm{kept}} w_{t_i}",
    precision=(
        "float32 in, float32 out; exponentials, sums and the log-sum-exp in float32 with the row "
        "maximum subtracted; tolerance rtol=1e-5, atol=1e-6 (any summation order passes)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((67, 1000), seed=1),
        Case((129, 517), seed=2, dist="outlier", params={"scale": 30.0, "reduction": "none"}),
        Case((45, 333), seed=3, dist="corner", params={"ignored": 0.2, "reduction": "sum"}),
        Case((99, 257), seed=4, params={"weighted": True, "ignored": 0.3}),
        Case(
            (31, 2049),
            seed=5,
            dist="outlier",
            params={"weighted": True, "ignored": 0.25, "ignore_index": 7, "reduction": "none"},
        ),
        Case((7, 4099), seed=6, params={"scale": 100.0, "weighted": True, "reduction": "sum"}),
    ),
    bench=(
        Case((8192, 32000), seed=11, params={"ignored": 0.1}),
        Case((16384, 32000), seed=12, params={"weighted": True, "reduction": "none"}),
    ),
    flops=lambda c: 4.0 * c.shape[0] * c.shape[1],
    bytes_moved=cases_bytes,
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
