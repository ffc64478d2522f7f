"""Fusion/fused_cholesky_solve: solve A X = B for SPD A via its Cholesky factor, batched."""

import torch

from kbx.suite.inputs import Draw, numel, spectral_norm
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = 2e-5  # float32 solves reach ~1e-6 here (cond(A) <= 4); half-precision inputs ~5e-4


def reference(A: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.cholesky_solve(b, torch.linalg.cholesky(A))


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (*batch, n, k); A = s (I + 3 G G^T / ||G||^2) has eigenvalues in s [1, 4], with s
    = 1 except in the corner case (1e-4 .. 1e4 per matrix); b is drawn in the case's dist.
    Benchmark sizes are drawn on the GPU (``Draw.sized``): on the CPU they took
    12-21 s of a child's setup on one CPU thread on the H200 (2026-11-30)."""
    *batch, n, k = case.shape
    d = Draw.sized(case, device)
    g = d.tensor((*batch, n, n), dtype=torch.float64, dist="normal")
    g = g / spectral_norm(g).clamp_min(1e-300)[..., None, None]
    a = torch.eye(n, dtype=torch.float64, device=d.device) + 3 * g @ g.mT
    if case.dist == "corner":
        a = a * 10 ** d.uniform((*batch, 1, 1), -4, 4, dtype=torch.float64)
    a = ((a + a.mT) / 2).float()  # exactly symmetric
    b = d.tensor((*batch, n, k), specials=(0.0, -0.0, 1e3, -1e3))
    return Inputs((a.to(device), b.to(device)))


def check(inputs: Inputs, out: torch.Tensor) -> str | None:
    """X is unique: compare with the float64 solution, relative to each system's largest |X|
    (on the inputs' device)."""
    a, b = (t.double() for t in inputs.args)
    want = torch.linalg.solve(a, b)
    err = (out.to(a.device).double() - want).abs().amax(dim=(-2, -1))
    scale = want.abs().amax(dim=(-2, -1)).clamp_min(1e-300)
    rel = err / scale
    worst = float(rel.max()) if rel.numel() else 0.0
    if not worst <= TOL:  # NaN fails
        return f"max |X - X_true| / max |X_true| = {worst:.3g} > {TOL:g} (worst system)"
    return None


def flops(c: Case) -> float:
    *batch, n, k = c.shape
    return numel(batch) * (n**3 / 3.0 + 2.0 * n * n * k)


TASK = Task(
    entry="fused_cholesky_solve",
    signature="fused_cholesky_solve(A: torch.Tensor, b: torch.Tensor) -> torch.Tensor",
    description=(
        "Solve A X = b for symmetric positive-definite A through its Cholesky factorization "
        "A = L L^T (L lower triangular, positive diagonal) followed by the two triangular "
        "solves L Y = b and L^T X = Y, like torch.cholesky_solve(b, torch.linalg.cholesky(A)). "
        "A is float32 (*, n, n), exactly symmetric, with eigenvalues in [1, 4] times a "
        "per-matrix scale (1, except in the corner case where it spans 1e-4..1e4); b is float32 "
        "(*, n, k) with the same batch dims (none, one or two). Returns X, float32 (*, n, k). "
        "Cases cover 1x1 to 61x61 systems, k from 1 to 40, batched and unbatched inputs, and "
        "right-hand sides with zeros and +-1e3 entries."
    ),
    math=r"A = L L^\top,\quad L Y = B,\quad L^\top X = Y",
    precision=(
        "float32 in and out, computed in float32 (no TF32). X is unique and is compared per "
        "system with the float64 solution of the same float32 inputs: "
        f"max|X - X64| / max|X64| <= {TOL:g}."
    ),
    reference=reference,
    make_inputs=make_inputs,
    version=3,  # benchmark inputs drawn and checks run on the GPU (2026-11-30; 2 was 05dc53b)
    cases=(
        Case((37, 5), seed=1),
        Case((6, 24, 3), seed=2, dist="outlier"),
        Case((3, 1, 1), seed=3, dist="corner"),
        Case((4, 19, 40), seed=4, dist="corner"),
        Case((2, 3, 45, 1), seed=5),
        Case((61, 17), seed=6, dist="outlier"),
    ),
    bench=(
        Case((16384, 32, 16), seed=11),
        Case((4096, 64, 64), seed=12),
    ),
    flops=flops,
    bytes_moved=lambda c: 4.0 * numel(c.shape[:-2]) * c.shape[-2] * (c.shape[-2] + 2 * c.shape[-1]),
    tolerance=Tolerance(rtol=TOL, atol=TOL),
    check=check,
)
