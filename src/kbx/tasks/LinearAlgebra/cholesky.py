"""LinearAlgebra/cholesky: Cholesky factor of batched SPD matrices, lower or upper."""

import torch

from kbx.suite.inputs import Draw, numel, spectral_norm
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = 2e-5  # float32 factors reach ~1e-6 here; fp16-rounded inputs or outputs ~3e-4
# corner entries: signed zeros, a tiny value and moderate spikes keep the structure dense
SPECIALS = (0.0, -0.0, 1e-30, 8.0, -8.0)


def reference(A: torch.Tensor, upper: bool = False, out: torch.Tensor = None) -> torch.Tensor:
    return torch.linalg.cholesky(A, upper=upper, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    """A = s (I + 3 G G^T / ||G||^2): eigenvalues in s [1, 4]; corner cases vary s in 1e+-4.
    Benchmark sizes are drawn on the GPU (``Draw.sized``): on the CPU they took
    12-21 s of a child's setup on one CPU thread on the H200 (2026-11-30)."""
    d = Draw.sized(case, device)
    *batch, n, _ = case.shape
    g = d.tensor(case.shape, dtype=torch.float64, specials=SPECIALS)
    g = g / spectral_norm(g).clamp_min(1e-300)[..., None, None]
    a = torch.eye(n, dtype=torch.float64, device=d.device) + 3 * g @ g.mT
    if case.dist == "corner":
        a = a * 10 ** d.uniform((*batch, 1, 1), -4, 4, dtype=torch.float64)
    a = (a + a.mT) / 2  # exactly symmetric after rounding to float32
    return Inputs((a.to(case.dtype).to(device),), {"upper": case.params.get("upper", False)})


def check(inputs: Inputs, out: torch.Tensor) -> str | None:
    """The factor is unique: compare with the float64 factor, relative to each matrix's largest
    (on the inputs' device)."""
    A = inputs.args[0].double()
    want = torch.linalg.cholesky(A, upper=inputs.kwargs["upper"])
    got = out.to(A.device).double()
    err = (got - want).abs().amax(dim=(-2, -1)) / want.abs().amax(dim=(-2, -1))
    worst = float(err.max()) if err.numel() else 0.0
    if not worst <= TOL:
        return f"max |L - L_true| / max |L_true| = {worst:.3g} > {TOL:g} (worst matrix)"
    return None


TASK = Task(
    entry="cholesky",
    signature=(
        "cholesky(A: torch.Tensor, upper: bool=False, out: torch.Tensor=None) -> torch.Tensor"
    ),
    description=(
        "Cholesky factorization like torch.linalg.cholesky: for a float32 tensor A of shape "
        "(..., n, n) holding symmetric positive-definite matrices, return the float32 factor of "
        "the same shape: lower triangular L with positive diagonal and A = L L^T, or with "
        "upper=True the upper triangular U = L^T (A = U^T U). The other triangle of the output is "
        "zero. Inputs are exactly symmetric with eigenvalues in [1, 4] times a per-matrix scale "
        "(1 except in the corner case, where it spans 1e-4..1e4); cases cover 1x1 to 45x45 "
        "matrices, with and without batch dimensions, and upper=True. `out` is never passed."
    ),
    math=r"A = L L^\top,\quad L_{ii} > 0,\quad L_{ij} = 0 \ (j > i)",
    precision=(
        "float32 in and out, computed in float32 (no TF32). The factor is unique; it is compared "
        "per matrix with the float64 factor of the same float32 input: "
        f"max|L - L64| / max|L64| <= {TOL:g}."
    ),
    reference=reference,
    make_inputs=make_inputs,
    version=2,  # benchmark inputs drawn and checks run on the GPU (2026-11-30)
    cases=(
        Case((37, 37), seed=1),
        Case((5, 24, 24), seed=2, dist="outlier", params={"upper": True}),
        Case((3, 1, 1), seed=3, dist="corner"),
        Case((4, 19, 19), seed=4, dist="corner"),
        Case((2, 3, 45, 45), seed=5, params={"upper": True}),
    ),
    bench=(
        Case((16384, 32, 32), seed=11),
        Case((4096, 64, 64), seed=12, params={"upper": True}),
    ),
    flops=lambda c: numel(c.shape[:-2]) * c.shape[-1] ** 3 / 3.0,
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=TOL, atol=TOL),
    check=check,
)
