"""Fusion/fused_index_select_eq: torch.eq(torch.index_select(input, dim, index), other)."""

import math

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.moved import distinct
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(input, dim, index, other, *, out=None):
    y = torch.eq(torch.index_select(input, dim, index), other)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(case: Case, device: str) -> Inputs:
    """case.shape is the input's shape; params: dim, k (index length), other ('full' | 'row' |
    a number), index dtype. Values are small whole numbers, so that about a third compare
    equal; corner floats add NaN (never equal) and -0.0 (equal to 0)."""
    p = case.params
    d = Draw(case, device)
    dim, k = p["dim"], p["k"]
    x = d.integers(case.shape, 0, 3, dtype=torch.float64)
    sel = list(case.shape)
    sel[dim] = k
    kind = p.get("other", "full")
    o = d.integers(sel if kind == "full" else sel[-1:], 0, 3, dtype=torch.float64)
    if case.dist == "corner":
        pick = d.uniform(case.shape, 0, 1, dtype=torch.float64)
        x = torch.where(pick < 0.05, math.nan, torch.where(pick < 0.15, -0.0, x))
    index = d.integers((k,), 0, case.shape[dim], dtype=p.get("index_dtype", torch.int64))
    other = o.to(case.dtype) if kind in ("full", "row") else kind
    return Inputs((x.to(case.dtype), dim, index, other))


def _bytes(c: Case) -> float:
    """The input slices the index names (each once: it repeats), the index, `other` and the
    boolean output."""
    p, item = c.params, c.dtype.itemsize
    dim, k = p["dim"] % len(c.shape), p["k"]
    size, out = c.shape[dim], numel(c.shape) // c.shape[dim] * k
    other = {"full": out, "row": c.shape[-1]}.get(p.get("other", "full"), 0)
    index = (4 if p.get("index_dtype") == torch.int32 else 8) * k
    return item * (numel(c.shape) // size * distinct(size, k) + other) + index + out


TASK = Task(
    entry="fused_index_select_eq",
    signature="fused_index_select_eq(input, dim, index, other, *, out=None)",
    description=(
        "S = torch.index_select(input, dim, index), then the boolean tensor S == other. `input` "
        "is a contiguous float32 or int64 tensor (1-D to 3-D), `dim` an int (possibly "
        "negative), `index` a 1-D int64 or int32 tensor of any length with values in "
        "[0, input.shape[dim]) (repeats allowed); `other` is a tensor of S's dtype broadcastable "
        "to S (S's full shape or a row over the last dim) or a Python number. Returns a new "
        "torch.bool tensor of S's shape; `out` is not passed. Values are small whole numbers so "
        "that many comparisons are true; corner cases add NaN (NaN == anything is False) and "
        "-0.0 (equal to 0). Cases select along the first, middle and last dims."
    ),
    math=r"O_{\dots k \dots} = \big[X_{\dots I_k \dots} = Y_{\dots k \dots}\big]",
    precision="exact: a boolean output (IEEE equality on float32, so -0.0 == 0.0, NaN != NaN).",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 129), seed=1, params={"dim": 0, "k": 50}),
        Case((23, 45, 17), seed=2, dist="corner", params={"dim": 1, "k": 61, "other": "row"}),
        Case((31, 77), seed=3, dist="corner", params={"dim": -1, "k": 40, "other": 0.0}),
        Case(
            (9, 13, 21),
            seed=4,
            dtype=torch.int64,
            params={"dim": 2, "k": 33, "index_dtype": torch.int32},
        ),
        Case((1001,), seed=5, dtype=torch.int64, params={"dim": 0, "k": 777, "other": 2}),
        Case((5, 60, 11), seed=6, params={"dim": -3, "k": 9, "other": "row"}),
    ),
    bench=(
        Case((16384, 4096), seed=11, params={"dim": 0, "k": 16384}),
        Case((4096, 16384), seed=12, params={"dim": 1, "k": 16384, "other": "row"}),
    ),
    flops=lambda c: float(numel(c.shape) // c.shape[c.params["dim"]] * c.params["k"]),
    bytes_moved=_bytes,
    tolerance=Tolerance(rtol=0.0, atol=0.0),
)
