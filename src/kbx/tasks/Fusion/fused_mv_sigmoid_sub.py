"""Fusion/fused_mv_sigmoid_sub: sigmoid(input @ vec) - alpha * other."""

import math

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 20.0, -20.0, 1e-30)  # +-20 entries push rows towards saturation


def reference(input, vec, other, alpha=1, *, out=None):
    y = torch.sub(torch.sigmoid(torch.mv(input, vec)), other, alpha=alpha)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (n, m); params: other ('full': (n,) | 'one': (1,) | a number), alpha. vec is
    scaled by 2/sqrt(m), so input @ vec spreads ~N(0, 4) over the sigmoid's range."""
    q = case.params
    n, m = case.shape
    d = Draw(case, device)
    a = d.tensor(case.shape, specials=SPECIALS)
    v = d.tensor((m,), dist="normal", scale=2 / math.sqrt(m))
    kind = q.get("other", "full")
    other = {"full": (n,), "one": (1,)}.get(kind)
    other = d.tensor(other, dist="normal") if other else kind
    return Inputs((a, v, other), {"alpha": q["alpha"]} if "alpha" in q else {})


TASK = Task(
    entry="fused_mv_sigmoid_sub",
    signature="fused_mv_sigmoid_sub(input, vec, other, alpha=1, *, out=None)",
    description=(
        "z = input @ vec (torch.mv) with `input` a contiguous float32 (n, m) matrix and `vec` "
        "float32 (m,); s = sigmoid(z) = 1 / (1 + exp(-z)); y = s - alpha * other, where "
        "`other` is a float32 (n,) tensor, a (1,) tensor or a Python number and alpha a Python "
        "number (1, 0.5, -2, 0). Returns a new float32 (n,) tensor; `out` is not passed. "
        "Corner inputs put +-0 and +-20 in the matrix (rows near the sigmoid's saturation)."
    ),
    math=r"y = \sigma(A v) - \alpha\, o",
    precision=(
        "float32 in and out; the dot products accumulate in float32 (no TF32 or other "
        "reduced-precision products); rtol=1e-5, atol=2e-6."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 129), seed=1),
        Case((201, 77), seed=2, dist="outlier", params={"other": 0.25, "alpha": -2}),
        Case((97, 300), seed=3, dist="corner", params={"other": "one", "alpha": 0.5}),
        Case((1000, 33), seed=4, params={"alpha": 0}),
        Case((5, 2001), seed=5, dist="outlier", params={"alpha": 0.5}),
    ),
    bench=(
        Case((16384, 16384), seed=11),
        Case((65536, 4096), seed=12, params={"other": 1.0, "alpha": 0.5}),
    ),
    flops=lambda c: 2.0 * numel(c.shape),
    bytes_moved=lambda c: (
        4.0
        * (
            numel(c.shape)
            + c.shape[1]
            + c.shape[0]
            + {"full": c.shape[0], "one": 1}.get(c.params.get("other", "full"), 0)
        )
    ),
    tolerance=Tolerance(rtol=1e-5, atol=2e-6),
)
