"""Math/polygamma: the n-th derivative of the digamma function, element-wise, for x > 0."""

import torch

from kbx.suite.compare import compare
from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance
from kbx.suite.verdict import Reject

# Integers and halves, a tiny and a huge argument, the positive zero of digamma, NaN.
SPECIALS = (1.0, 0.5, 2.0, 1e-3, 1e4, 1.4616321449683622, float("nan"))
RTOL, DIGAMMA_ATOL = 1e-5, 2e-6


def reference(n, input, *, out=None):
    return torch.special.polygamma(n, input, out=out)


def exact(n, x: torch.Tensor) -> torch.Tensor:
    """The float32 target: torch's float64 evaluation, rounded.  On the CPU: on the GPU the
    benchmark sizes held the parent's check 12-30 s in a loaded H200 run (2026-11-30); one CPU
    thread takes ~1.4 s for 2^24 elements at n = 3."""
    return torch.special.polygamma(n, x.cpu().double()).to(x.dtype)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)  # benchmark sizes drawn on the GPU (``Draw``)
    z = draw.tensor(case.shape, dtype=torch.float64, specials=())
    x = 0.05 + case.params.get("spread", 2.0) * z.abs()  # x > 0: no poles
    if case.dist == "corner":
        pick = draw.uniform(case.shape, 0, 1, dtype=torch.float64) < 0.05
        which = draw.integers(case.shape, 0, len(SPECIALS))
        x = torch.where(
            pick, torch.tensor(SPECIALS, dtype=torch.float64, device=x.device)[which], x
        )
    return Inputs((case.params["n"], x.to(case.dtype)))


def check(inputs: Inputs, output) -> str | None:
    """Relative error 1e-5 against torch in float64; digamma (n = 0) also gets atol 2e-6.

    Digamma changes sign at x = 1.4616..., where any float32 evaluation (a difference of
    terms of size ~2) has absolute, not relative, error; the n >= 1 functions have no zeros,
    so they are judged relatively down to tiny values.
    """
    n, x = inputs.args
    want = exact(n, x)
    tol = Tolerance(rtol=RTOL, atol=DIGAMMA_ATOL if n == 0 else 1e-30)
    try:
        compare(output, want, tol)
    except Reject as r:
        return r.detail
    return None


TASK = Task(
    entry="polygamma",
    signature="polygamma(n, input, *, out=None)",
    description=(
        "Return psi^(n)(x), the n-th derivative of the digamma function psi = Gamma'/Gamma, for "
        "every element x of the float32 tensor `input` (any shape), as "
        "torch.special.polygamma(n, input); `n` is a Python int >= 0 (n = 0 is digamma). For "
        "n >= 1, psi^(n)(x) = (-1)^(n+1) n! sum_{k>=0} (x + k)^-(n+1). Output float32 of the "
        "input's shape; NaN stays NaN. If the keyword `out` is given, write the result into it "
        "and return it (no case passes it). Inputs are positive: x = 0.05 + 2|z| from normal "
        "and outlier draws (up to ~160), x = 0.05 + 0.3|z| (small x, large values), and corner "
        "values (1, 0.5, 2, 1e-3, 1e4, the zero 1.46163 of digamma, NaN). Cases cover n = 0 to "
        "6. The poles x = 0, -1, ... and negative x are not drawn."
    ),
    math=r"\psi^{(n)}(x) = \frac{d^{n}}{dx^{n}} \frac{\Gamma'(x)}{\Gamma(x)}",
    precision=(
        "float32 in and out. Judged against torch's float64 evaluation rounded to float32 (the "
        "float32 reference is the timed baseline only): relative error 1e-5, plus an absolute "
        "2e-6 for n = 0 only (digamma crosses zero at 1.46163, where float32 evaluation has "
        "absolute error ~1e-6). NaN and +-inf must appear exactly where torch puts them. "
        "Recurrence plus asymptotic series in float32 reach ~5e-7 relative; half-precision "
        "inputs or results fail."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, params={"n": 0}),
        Case((37, 1023), seed=2, dist="outlier", params={"n": 1}),
        Case((3, 129, 65), seed=3, dist="corner", params={"n": 2}),
        Case((2047, 5), seed=4, params={"n": 3, "spread": 0.3}),
        Case((257, 31), seed=5, dist="corner", params={"n": 0}),
        Case((63, 65), seed=6, dist="outlier", params={"n": 4}),
        Case((1001,), seed=7, dist="corner", params={"n": 6}),
    ),
    bench=(
        Case((1 << 24,), seed=11, params={"n": 0}),
        Case((4096, 4096), seed=12, params={"n": 1}),
        Case((1 << 24,), seed=13, dist="outlier", params={"n": 3}),
    ),
    flops=lambda c: (30.0 if c.params["n"] == 0 else 250.0) * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    version=2,  # benchmark inputs drawn on the GPU, not on the CPU (2026-11-30)
    tolerance=Tolerance(rtol=RTOL, atol=DIGAMMA_ATOL),  # unused: check() judges the values
    check=check,
)
