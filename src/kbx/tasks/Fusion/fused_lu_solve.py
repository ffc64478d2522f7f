"""Fusion/fused_lu_solve: solve A x = b by LU factorisation with partial pivoting (batched)."""

import torch

from kbx.suite.inputs import DEVICE_DRAW_NUMEL, Draw, numel, spectral_norm
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = 1e-5  # float32 elimination reaches ~1e-7 here; fp16-rounded inputs ~5e-4
SPECIALS = (0.0, -0.0, 8.0, -8.0)  # signed zeros and moderate spikes


def reference(A, b):
    lu, pivots = torch.linalg.lu_factor(A)
    return torch.linalg.lu_solve(lu, pivots, b.unsqueeze(-1)).squeeze(-1)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (..., n): A (..., n, n) = rows of 3 S + 2 E / ||E||_2 shuffled (S a random sign
    diagonal: singular values in [1, 5]), b (..., n); corner A scaled by 10^U(-3, 3).
    Benchmark sizes are drawn on the GPU (``Draw.sized``'s rule, on A's size): on the CPU they
    took 12-21 s of a child's setup on one CPU thread on the H200 (2026-11-30)."""
    *batch, n = case.shape
    # case.shape is b's (16384 x 32 at most), under Draw.sized's threshold: size by A's instead
    big = device.startswith("cuda") and numel((*batch, n, n)) > DEVICE_DRAW_NUMEL
    d = Draw(case, device if big else "cpu")
    e = d.tensor((*batch, n, n), dtype=torch.float64, specials=SPECIALS)
    e = e / spectral_norm(e).clamp_min(1e-300)[..., None, None]
    sign = torch.where(d.uniform((*batch, n), 0, 1, dtype=torch.float64) < 0.5, -1.0, 1.0)
    a = 3 * torch.diag_embed(sign) + 2 * e
    order = d.uniform((*batch, n), 0, 1, dtype=torch.float64).argsort(dim=-1)
    a = a.gather(-2, order[..., None].expand_as(a))  # shuffled rows: pivoting is needed
    if case.dist == "corner":
        a = a * 10 ** d.uniform((*batch, 1, 1), -3, 3, dtype=torch.float64)
    b = d.tensor(case.shape, dtype=torch.float64, specials=SPECIALS, scale=3.0)
    return Inputs((a.to(case.dtype).to(device), b.to(case.dtype).to(device)))


def check(inputs: Inputs, x: torch.Tensor) -> str | None:
    """Normwise backward error of each system, in float64:
    ||A x - b||_inf / (||A||_inf ||x||_inf + ||b||_inf) <= TOL."""
    A, b = (t.double() for t in inputs.args)
    xd = x.to(A.device).double()
    r = (A @ xd.unsqueeze(-1)).squeeze(-1) - b
    scale = A.abs().sum(-1).amax(-1) * xd.abs().amax(-1) + b.abs().amax(-1)
    err = r.abs().amax(-1) / scale.clamp_min(1e-300)
    worst = float(err.nan_to_num(float("inf")).max())
    if not worst <= TOL:
        return f"backward error ||Ax - b|| / (||A|| ||x|| + ||b||) = {worst:.3g} > {TOL:g}"
    return None


TASK = Task(
    entry="fused_lu_solve",
    signature="fused_lu_solve(A: torch.Tensor, b: torch.Tensor) -> torch.Tensor",
    description=(
        "Solve A x = b through an LU factorisation with partial pivoting (A = P L U, then two "
        "triangular solves). A is float32 (..., n, n) (a single matrix or a batch), b float32 "
        "(..., n) with the same batch dims; return x, float32 (..., n). The matrices are "
        "nonsingular and well conditioned (singular values in [1, 5]) with shuffled rows, so "
        "elimination must pivot; the corner case scales each A by 10^-3..10^3 and puts signed "
        "zeros and +-8 spikes in A and b. n ranges 1..64. The factors are not returned: x is "
        "judged by its residual (below)."
    ),
    math=r"x = U^{-1} L^{-1} P^T b,\quad A = P L U",
    precision=(
        "float32 in and out, elimination in float32 (or wider). Judged per system in float64 "
        f"by the normwise backward error ||A x - b||_inf / (||A||_inf ||x||_inf + ||b||_inf) "
        f"<= {TOL:g}."
    ),
    reference=reference,
    make_inputs=make_inputs,
    version=3,  # benchmark inputs drawn on the GPU (2026-11-30); its check already ran there
    cases=(
        Case((37,), seed=1),
        Case((4, 24), seed=2, dist="outlier"),
        Case((5, 1), seed=3, dist="corner"),
        Case((3, 19), seed=4, dist="corner"),
        Case((2, 3, 33), seed=5),
        Case((64,), seed=6, dist="outlier"),
    ),
    bench=(
        Case((16384, 32), seed=11),
        Case((4096, 64), seed=12),
    ),
    flops=lambda c: numel(c.shape[:-1]) * (2.0 * c.shape[-1] ** 3 / 3 + 2.0 * c.shape[-1] ** 2),
    bytes_moved=lambda c: 4.0 * numel(c.shape[:-1]) * (c.shape[-1] ** 2 + 2 * c.shape[-1]),
    tolerance=Tolerance(rtol=TOL, atol=TOL),
    check=check,
)
