"""LinearAlgebra/eig: eigendecomposition of real matrices with real, distinct eigenvalues."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = 5e-5  # float32 QR iterations reach ~2e-6 here; eigenpairs of fp16-rounded A >= 2e-4 off
# corner entries: signed zeros, a tiny value and moderate spikes keep the structure dense
SPECIALS = (0.0, -0.0, 1e-30, 8.0, -8.0)


def reference(A):
    return torch.linalg.eig(A)


def make_inputs(case: Case, device: str) -> Inputs:
    """A = V diag(lam) V^-1: V = 3 D + 2 E / ||E||_2 (D random signs, singular values in [1, 5]);
    |lam| on a jittered grid over [0.5, 2.5] (gaps >= 0.8 / n), random signs; corner matrices
    are scaled by 1e-3..1e3."""
    d = Draw(case, "cpu")
    *batch, n, _ = case.shape
    grid = (
        torch.arange(n, dtype=torch.float64) + d.uniform((*batch, n), 0.3, 0.7, dtype=torch.float64)
    ) / n
    lam = (0.5 + 2 * grid) * torch.where(
        d.uniform((*batch, n), 0, 1, dtype=torch.float64) < 0.5, -1.0, 1.0
    )
    e = d.tensor(case.shape, dtype=torch.float64, specials=SPECIALS)
    e = e / torch.linalg.matrix_norm(e, ord=2).clamp_min(1e-300)[..., None, None]
    sign = torch.where(d.uniform((*batch, n), 0, 1, dtype=torch.float64) < 0.5, -1.0, 1.0)
    v = 3 * torch.diag_embed(sign) + 2 * e
    a = torch.linalg.solve(v.mT, (v * lam[..., None, :]).mT).mT  # V diag(lam) V^-1
    if case.dist == "corner":
        a = a * 10 ** d.uniform((*batch, 1, 1), -3, 3, dtype=torch.float64)
    return Inputs((a.to(case.dtype).to(device),))


def check(inputs: Inputs, out) -> str | None:
    """Eigenvalues (sorted) match float64; every column is a unit eigenvector of its value."""
    A = inputs.args[0].cpu().double()
    w, V = (t.cpu().to(torch.complex128) for t in out)
    if not (
        torch.isfinite(torch.view_as_real(w)).all() and torch.isfinite(torch.view_as_real(V)).all()
    ):
        return "eigenvalues or eigenvectors hold NaN or Inf"
    w_true = torch.linalg.eigvals(A)
    order = lambda z: torch.sort(z.real, dim=-1).indices  # real and well separated here
    w_sorted = torch.take_along_dim(w, order(w), dim=-1)
    w_true = torch.take_along_dim(w_true, order(w_true), dim=-1)
    scale = w_true.abs().amax(-1, keepdim=True)
    residual = A.to(V.dtype) @ V - V * w[..., None, :]
    errors = {
        "max|w - w_true| / max|w_true| (sorted)": (w_sorted - w_true).abs() / scale,
        "max ||A v - w v|| / max|w_true|": torch.linalg.vector_norm(residual, dim=-2) / scale,
        "max | ||v|| - 1 |": (torch.linalg.vector_norm(V, dim=-2) - 1).abs(),
    }
    for name, err in errors.items():
        worst = float(err.max())
        if not worst <= TOL:
            return f"{name} = {worst:.3g} > {TOL:g}"
    return None


TASK = Task(
    entry="eig",
    version=3,  # benchmark batches of ~100 ms eager calls (docs/design/task-changes.md)
    signature="eig(A)",
    description=(
        "Eigendecomposition like torch.linalg.eig for real matrices whose eigenvalues are real "
        "and distinct: for a float32 tensor A (..., n, n) return complex64 (eigenvalues "
        "(..., n), eigenvectors (..., n, n)) with A V = V diag(eigenvalues) and every column of "
        "V of unit 2-norm. The contract is restricted to such matrices (inputs are built as "
        "V diag(lam) V^-1 with well-conditioned V and |lam| in [0.5, 2.5], gaps >= 0.8/n, both "
        "signs), so the imaginary parts are zero and any order of the eigenpairs and any phase "
        "of each eigenvector are accepted: the output is judged by its properties. The corner "
        "case scales each matrix by 1e-3..1e3. n ranges 1..14, batched or not."
    ),
    math=r"A v_j = \lambda_j v_j,\ \|v_j\|_2 = 1,\quad A = V \operatorname{diag}(\lambda) V^{-1}",
    precision=(
        "float32 in, complex64 out, computed in float32 (no TF32). Checked in float64/complex128, "
        "relative to max|lambda|: sorted eigenvalues against float64 eigenvalues of the same "
        f"float32 input, column residuals ||A v - lambda v||, and | ||v|| - 1 |, all <= {TOL:g}."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((10, 10), seed=1),
        Case((3, 8, 8), seed=2, dist="outlier"),
        Case((4, 1, 1), seed=3, dist="corner"),
        Case((2, 9, 9), seed=4, dist="corner"),
        Case((14, 14), seed=5),
    ),
    bench=(  # small batches: eager eig / LDL^T on the GPU loop over the batch
        Case((32, 32, 32), seed=11),
        Case((64, 16, 16), seed=12),
    ),
    # Hessenberg reduction 10n^3/3, ~3 shifted QR sweeps per eigenvalue (6n^2 each), vectors n^3
    flops=lambda c: numel(c.shape[:-2]) * (10.0 / 3 + 18 + 1) * c.shape[-1] ** 3,
    bytes_moved=lambda c: 4.0 * numel(c.shape[:-2]) * (3 * c.shape[-1] ** 2 + 2 * c.shape[-1]),
    tolerance=Tolerance(rtol=TOL, atol=TOL),
    check=check,
)
