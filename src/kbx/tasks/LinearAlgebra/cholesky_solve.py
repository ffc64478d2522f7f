"""LinearAlgebra/cholesky_solve: solve A X = B from the Cholesky factor of A, batched."""

import torch

from kbx.suite.inputs import Draw, numel, spectral_norm
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = 2e-5  # float32 solves reach ~3e-7 here; fp16-rounded inputs or outputs ~3e-4
# corner right-hand sides: signed zeros and moderate spikes (huge or tiny ones would leave
# most of the solution below the tolerance's resolution)
RHS_SPECIALS = (0.0, -0.0, 8.0, -8.0)


def reference(B, L, upper=False, out=None):
    return torch.cholesky_solve(B, L, upper=upper, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (..., n, k): B (..., n, k) and the factor of s (I + 3 G G^T / ||G||^2), s = 1 or
    1e+-3 in the corner case; the unused triangle of the factor holds zeros.
    Benchmark sizes are drawn on the GPU (``Draw.sized``): on the CPU they took
    12-21 s of a child's setup on one CPU thread on the H200 (2026-11-30)."""
    d = Draw.sized(case, device)
    *batch, n, k = case.shape
    b = d.tensor(case.shape, dtype=torch.float64, specials=RHS_SPECIALS)
    g = d.tensor((*batch, n, n), dtype=torch.float64, dist="normal")
    g = g / spectral_norm(g).clamp_min(1e-300)[..., None, None]
    a = torch.eye(n, dtype=torch.float64, device=d.device) + 3 * g @ g.mT
    if case.dist == "corner":
        a = a * 10 ** d.uniform((*batch, 1, 1), -3, 3, dtype=torch.float64)
    upper = case.params.get("upper", False)
    factor = torch.linalg.cholesky(a, upper=upper)
    return Inputs((b.to(case.dtype).to(device), factor.to(case.dtype).to(device), upper))


def check(inputs: Inputs, out: torch.Tensor) -> str | None:
    """The solution is unique: compare with float64, relative to each system's largest entry
    (on the inputs' device)."""
    B, L, upper = inputs.args
    want = torch.cholesky_solve(B.double(), L.double(), upper=upper)
    got = out.to(B.device).double()
    err = (got - want).abs().amax(dim=(-2, -1)) / want.abs().amax(dim=(-2, -1))
    worst = float(err.max())
    if not worst <= TOL:
        return f"max |X - X_true| / max |X_true| = {worst:.3g} > {TOL:g} (worst system)"
    return None


TASK = Task(
    entry="cholesky_solve",
    signature="cholesky_solve(B, L, upper=False, out=None)",
    description=(
        "Solve A X = B given the Cholesky factor of the symmetric positive-definite A, like "
        "torch.cholesky_solve: B is float32 (..., n, k); L is float32 (..., n, n), lower "
        "triangular with A = L L^T, or with upper=True upper triangular with A = L^T L. Return "
        "X = A^{-1} B, float32 (..., n, k). Only the triangle named by `upper` is read (the "
        "other one holds zeros in the cases). Batch dimensions of B and L are equal. A has "
        "eigenvalues in [1, 4] (times 1e-3..1e3 per matrix in the corner case, whose B also "
        "holds signed zeros and +-8 entries); n ranges 1..45, k 1..16, and upper is "
        "exercised both ways. `out` is never passed."
    ),
    math=r"X = (L L^\top)^{-1} B:\ L Y = B,\ L^\top X = Y",
    precision=(
        "float32 in and out, computed in float32 (no TF32). X is unique; it is compared per "
        "system with the float64 solution for the same float32 inputs: "
        f"max|X - X64| / max|X64| <= {TOL:g}."
    ),
    reference=reference,
    make_inputs=make_inputs,
    version=2,  # benchmark inputs drawn and checks run on the GPU (2026-11-30)
    cases=(
        Case((37, 5), seed=1),
        Case((4, 24, 3), seed=2, dist="outlier", params={"upper": True}),
        Case((3, 1, 1), seed=3),
        Case((5, 19, 7), seed=4, dist="corner"),
        Case((2, 3, 45, 16), seed=5, dist="corner", params={"upper": True}),
    ),
    bench=(
        Case((8192, 32, 32), seed=11),
        Case((2048, 64, 128), seed=12, params={"upper": True}),
    ),
    flops=lambda c: 2.0 * numel(c.shape[:-2]) * c.shape[-2] ** 2 * c.shape[-1],
    bytes_moved=lambda c: 4.0 * numel(c.shape[:-2]) * (c.shape[-2] ** 2 + 2 * numel(c.shape[-2:])),
    tolerance=Tolerance(rtol=TOL, atol=TOL),
    check=check,
)
