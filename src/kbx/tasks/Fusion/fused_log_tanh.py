"""Fusion/fused_log_tanh: tanh(log(input)) element-wise, over the whole float32 range."""

import math

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Specials are drawn in log space (the input is sign * exp(t)): t = -inf gives 0, +inf gives inf,
# NaN gives NaN, 0 gives exactly 1 (tanh(0) = 0), +-69 give 1e30 and 1e-30, where x^2 overflows
# or underflows in float32 (a kernel using (x^2 - 1) / (x^2 + 1) naively breaks there).
LOG_SPECIALS = (-math.inf, math.inf, math.nan, 0.0, 69.0, -69.0)


def reference(input, out=None):
    y = torch.tanh(torch.log(input))
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(case: Case, device: str) -> Inputs:
    """Log-normal magnitudes; the corner case adds specials and ~3% negative inputs (and -0.0)."""
    d = Draw(case, device)
    t = d.tensor(case.shape, dtype=torch.float64, specials=LOG_SPECIALS, scale=1.5)
    x = torch.exp(t)
    if case.dist == "corner":
        x = torch.where(d.uniform(case.shape, 0, 1, dtype=torch.float64) < 0.03, -x, x)
    return Inputs((x.to(case.dtype),))


TASK = Task(
    entry="fused_log_tanh",
    signature="fused_log_tanh(input, out=None)",
    description=(
        "Element-wise tanh(log(x)) of a contiguous float32 tensor (1-D to 4-D), returned as a "
        "new float32 tensor of the same shape; `out` is not passed. Inputs are log-normal "
        "(log|x| ~ N(0, 1.5^2), heavier tails in the outlier case). IEEE/torch semantics at the "
        "edges, all exercised by the corner case: x = +0 or -0 gives log = -inf and -1; x < 0 "
        "gives NaN; x = +inf gives 1; NaN stays NaN; x = 1 gives exactly 0; x = 1e30 and 1e-30 "
        "give 1 and -1 (x^2 over/underflows in float32 there, so the closed form "
        "(x^2 - 1)/(x^2 + 1) must not be used naively)."
    ),
    math=r"y = \tanh(\ln x) = \frac{x^2 - 1}{x^2 + 1}\ (x > 0)",
    precision=(
        "float32 in and out, computed in float32; rtol=1e-5, atol=1e-6 (near x = 1 the result "
        "is ~log x, where float32 log has an absolute error of ~1e-7)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((1001,), seed=1),
        Case((37, 129), seed=2, dist="outlier"),
        Case((3, 45, 77), seed=3, dist="corner"),
        Case((2, 3, 31, 17), seed=4, dist="corner"),
        Case((513, 257), seed=5),
    ),
    bench=(
        Case((8192, 8192), seed=11),
        Case((16, 64, 256, 256), seed=12),
    ),
    flops=lambda c: 2.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
