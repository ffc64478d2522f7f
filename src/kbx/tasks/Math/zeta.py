"""Math/zeta: the Hurwitz zeta function zeta(x, q), element-wise with broadcasting."""

import torch

from kbx.suite.compare import compare
from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance
from kbx.suite.verdict import Reject

# Corner values of x: the pole x = 1 (+inf), x < 1 (NaN), NaN, zeta(2), large exponents;
# of q: the Riemann case 1, small and large shifts, NaN.
X_SPECIALS = (1.0, 0.5, -2.0, float("nan"), 2.0, 1.5, 30.0)
Q_SPECIALS = (1.0, 0.5, 1e-3, 100.0, float("nan"))


TOLERANCE = Tolerance(rtol=1e-5, atol=1e-30)


def reference(input: torch.Tensor, other: torch.Tensor, out=None) -> torch.Tensor:
    return torch.special.zeta(input, other, out=out)


def check(inputs: Inputs, output) -> str | None:
    """Element-wise against torch's float64 evaluation rounded to float32 (not against the
    float32 reference, whose own error differs between torch's CPU and CUDA kernels)."""
    x, q = inputs.args
    # on the CPU, as polygamma's target: float64 on 2^24 elements is seconds of GPU under load
    want = torch.special.zeta(x.cpu().double(), q.cpu().double()).to(torch.result_type(x, q))
    try:
        compare(output, want, TOLERANCE)
    except Reject as r:
        return r.detail
    return None


def corner(draw: Draw, t: torch.Tensor, values: tuple[float, ...]) -> torch.Tensor:
    """Replace about 5% of a corner case's entries by special values."""
    if draw.case.dist != "corner":
        return t
    pick = draw.uniform(t.shape, 0, 1, dtype=torch.float64) < 0.05
    which = draw.integers(t.shape, 0, len(values))
    return torch.where(pick, torch.tensor(values, dtype=t.dtype, device=t.device)[which], t)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)  # benchmark sizes drawn on the GPU (``Draw``)
    p = case.params
    z = draw.tensor(p.get("x", case.shape), dtype=torch.float64, specials=())
    x = 1 + (p.get("spread", 2.0) * z.abs()).clamp(max=29.0)  # x in (1, 30]
    w = draw.tensor(p.get("q", case.shape), dtype=torch.float64, specials=())
    q = torch.ones_like(w) if p.get("riemann") else 0.05 + 2.0 * w.abs()
    x = corner(draw, x, X_SPECIALS).to(case.dtype)
    q = corner(draw, q, Q_SPECIALS).to(case.dtype)
    return Inputs((x, q))


TASK = Task(
    entry="zeta",
    signature=(
        "zeta(input: torch.Tensor, other: torch.Tensor, out: torch.Tensor=None) -> torch.Tensor"
    ),
    description=(
        "The Hurwitz zeta function zeta(x, q) = sum_{k>=0} (q + k)^-x of x = `input` and "
        "q = `other`, float32 tensors broadcast to a common shape, as torch.special.zeta; "
        "returns float32. q = 1 gives the Riemann zeta function. Special values as torch: "
        "x = 1 gives +inf, x < 1 gives NaN, NaN in either argument gives NaN; results beyond "
        "the float32 range are +inf (e.g. small q with large x). If `out` is given, write the "
        "result into it and return it (no case passes it). Cases draw x = 1 + 2|z| (up to 30) "
        "and q = 0.05 + 2|z| from normal and outlier draws, x just above 1 (1 + 0.01|z|), q = 1 "
        "throughout, (n, 1) against (1, m) broadcasting, and corner values (x: 1, 0.5, -2, NaN,"
        " 1.5, 2, 30; q: 1, 0.5, 1e-3, 100, NaN). q <= 0 is not drawn."
    ),
    math=r"\zeta(x, q) = \sum_{k=0}^{\infty} (q + k)^{-x}",
    precision=(
        "float32 in and out. Judged element-wise against torch's float64 evaluation rounded "
        "to float32 (the float32 reference is the timed baseline only), rtol=1e-5, atol=1e-30: "
        "the terms are all positive, so a float32 series plus an Euler-Maclaurin tail with an "
        "accurate pow stays within ~1e-6, while half-precision inputs or results fail; the tiny "
        "atol only forgives flushing results below the normal float32 range. NaN and +inf must "
        "appear exactly where torch puts them."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier"),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((129, 65), seed=4, params={"x": (129, 1), "q": (1, 65)}),
        Case((2047, 5), seed=5, params={"spread": 0.01}),
        Case((257, 31), seed=6, dist="corner", params={"riemann": True}),
    ),
    bench=(
        Case((1 << 24,), seed=11),
        Case((4096, 4096), seed=12, dist="outlier"),
    ),
    flops=lambda c: 250.0 * numel(c.shape),
    bytes_moved=lambda c: (
        4.0
        * (numel(c.params.get("x", c.shape)) + numel(c.params.get("q", c.shape)) + numel(c.shape))
    ),
    version=2,  # benchmark inputs drawn on the GPU, not on the CPU (2026-11-30)
    tolerance=TOLERANCE,
    check=check,
)
