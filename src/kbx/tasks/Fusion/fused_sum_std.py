"""Fusion/fused_sum_std: the standard deviation of the sums of x along some dims."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(input, dim=None, keepdim=False, dtype=None, correction=1, out=None):
    s = torch.sum(input, dim=dim, keepdim=keepdim, dtype=dtype)
    return torch.std(s, correction=correction, keepdim=keepdim, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    """params: dim, keepdim, correction, dtype (a name), shift (added to every element: the
    sums then share a large common part that a one-pass variance cancels badly)."""
    p = dict(case.params)
    x = Draw(case, device).tensor(case.shape, shift=p.pop("shift", 0.0))
    if "dtype" in p:
        p["dtype"] = getattr(torch, p["dtype"])
    return Inputs((x,), p)


def reduced(c: Case) -> int:
    dims = c.params["dim"]
    dims = (dims,) if isinstance(dims, int) else dims
    return numel([c.shape[d] for d in dims])


TASK = Task(
    entry="fused_sum_std",
    signature="fused_sum_std(input, dim=None, keepdim=False, dtype=None, correction=1, out=None)",
    description=(
        "Sum, then standard deviation: s = torch.sum(input, dim, keepdim, dtype) reduces the "
        "float32 `input` (2-D or 3-D, contiguous) over `dim` (an int, negative allowed, or a "
        "tuple of ints); then the result is torch.std(s, correction=correction, "
        "keepdim=keepdim), the standard deviation over ALL the K sums: sqrt(sum_k (s_k - "
        "mean)^2 / (K - correction)). Returns a 0-d tensor, or with keepdim=True a tensor of "
        "s's rank with every size 1. `dtype` None or torch.float64: the input is cast to it "
        "before summing and the result has that dtype. Cases: dim as int (first, last, "
        "negative) and as a tuple, keepdim, correction 0, 1 and 2, dtype=torch.float64, and "
        "inputs shifted by +3 or +5 so the sums share a large common part (a one-pass "
        "E[s^2] - E[s]^2 variance fails there). dim=None (a single sum, whose std is NaN) and "
        "`out` are accepted but not exercised."
    ),
    math=r"s_k = \sum_{i \in \mathrm{dim}} x_{k,i},\quad \sigma = \sqrt{\frac{\sum_k (s_k - "
    r"\bar s)^2}{\max(0, K - \delta)}}",
    precision=(
        "float32 in and out (float64 with dtype=torch.float64); sums and the variance "
        "accumulated in float32 or wider, variance by a stable (two-pass or Welford) method; "
        "rtol=1e-5, atol=0."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 129), seed=1, params={"dim": 1}),
        Case((5, 7, 9), seed=2, dist="outlier", params={"dim": (0, 2), "keepdim": True}),
        Case((301, 17), seed=3, params={"dim": 0, "correction": 0, "shift": 5.0}),
        Case((6, 11, 23), seed=4, dist="corner", params={"dim": -1, "shift": 3.0}),
        Case((13, 7, 40), seed=5, params={"dim": (1, 2), "dtype": "float64", "shift": 3.0}),
        Case((4, 2001), seed=6, dist="outlier", params={"dim": 1, "correction": 2}),
    ),
    bench=(
        Case((16384, 4096), seed=11, params={"dim": 1}),
        Case((4096, 16384), seed=12, params={"dim": 0, "shift": 3.0}),
    ),
    flops=lambda c: float(numel(c.shape)) + 3.0 * numel(c.shape) / reduced(c),
    bytes_moved=lambda c: 4.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=0.0),
)
