"""Reduce/std: standard deviation over dims or all elements, with a dof correction."""

import torch

from kbx.suite.bounds import off_by
from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

RTOL = 1e-5


def reference(input, dim=None, correction=1, keepdim=False, out=None):
    return torch.std(input, dim, correction=correction, keepdim=keepdim, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    p = case.params
    x = Draw(case, device).tensor(case.shape, shift=p.get("shift", 0.0), scale=p.get("scale", 1.0))
    dim, correction, keepdim = p.get("dim"), p.get("correction", 1), p.get("keepdim", False)
    out = None
    if p.get("out"):  # judged through `inplace`: its final contents must be the result
        meta = torch.empty(case.shape, device="meta")
        out = torch.zeros(torch.std(meta, dim, keepdim=keepdim).shape, device=device)
    return Inputs((x, dim, correction, keepdim, out))


def check(inputs: Inputs, out) -> str | None:
    """Relative error <= 1e-5 against the float64 standard deviation. A two-pass or Welford
    float32 computation is ~1e-7 off; the one-pass E[x^2] - E[x]^2 formula fails on the
    shifted cases, and so does rounding the inputs or the result to half precision."""
    x, dim, correction, keepdim, out_arg = inputs.args
    ret, (final,) = out
    want = torch.std(x.detach().cpu().double(), dim, correction=correction, keepdim=keepdim)
    claim = f"values off by more than {RTOL:g} relative"
    reason = off_by(ret, want, RTOL * want.abs(), "returned tensor", claim)
    if reason is None and out_arg is not None:
        reason = off_by(final, want, RTOL * want.abs(), "out", claim)
    return reason


TASK = Task(
    entry="std",
    signature=(
        "std(input: torch.Tensor, dim=None, correction=1, keepdim=False, out=None) -> torch.Tensor"
    ),
    description=(
        "Standard deviation of the float32 tensor `input` (1-D to 4-D), as torch.std(input, "
        "dim, correction=correction, keepdim=keepdim, out=out): over `dim` (an int, possibly "
        "negative, a tuple of ints, or None for all elements), sqrt(sum((x - mean)^2) / "
        "max(0, N - correction)) with N the number of reduced elements; correction is an int "
        "(1: Bessel, 0: population). keepdim=True keeps reduced dims with size 1. When `out` "
        "(float32, result's shape) is given the result is written into it and returned; its "
        "final contents are judged. All five arguments are passed positionally. Cases: dims "
        "None, single, negative and tuples, corrections 0, 1 and 2, keepdim both ways, out, "
        "outliers and corner values, and data whose mean is far larger than its spread "
        "(shift 100 or 1000), which the one-pass formula E[x^2] - E[x]^2 gets wrong in float32."
    ),
    math=r"\sigma = \sqrt{\frac{1}{\max(0, N - c)} \sum_i (x_i - \bar x)^2}",
    precision=(
        "float32 in and out, computed in float32 (two-pass or Welford/Chan merging); judged "
        "against the float64 value with relative error <= 1e-5."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 1023), seed=1, params={"dim": 1, "shift": 100.0}),
        Case((129, 65), seed=2, dist="outlier", params={"dim": 0, "keepdim": True}),
        Case((5, 63, 33), seed=3, dist="corner", params={"dim": -2, "correction": 0}),
        Case((7, 9, 11, 13), seed=4, params={"dim": (0, 2), "keepdim": True, "out": True}),
        Case((3, 17, 5, 129), seed=5, params={"dim": (-1, 1), "correction": 2, "shift": 1e3}),
        Case((100003,), seed=6, params={"shift": 100.0, "scale": 3.0}),
        Case((61, 257), seed=7, dist="outlier", params={"dim": 1, "out": True, "shift": -50.0}),
        Case((4099, 3), seed=8, params={"dim": 0, "correction": 0, "keepdim": True}),
    ),
    bench=(
        Case((1 << 27,), seed=11),
        Case((8192, 16384), seed=12, params={"dim": -1}),
        Case((64, 8192, 256), seed=13, params={"dim": 1}),
    ),
    flops=lambda c: 6.0 * numel(c.shape),
    bytes_moved=lambda c: 4.0 * numel(c.shape),
    tolerance=Tolerance(rtol=RTOL, atol=0.0),  # unused: check() judges the values
    check=check,
    inplace=(4,),
)
