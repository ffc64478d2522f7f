"""LinearAlgebra/qr: reduced QR factorization, judged by its defining properties."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(A: torch.Tensor, mode: str = "reduced", out=None):
    return torch.linalg.qr(A, mode=mode, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    # corner entries: signed zeros, a tiny value and a moderate spike keep A well-conditioned
    a = Draw(case, device).tensor(case.shape, specials=(0.0, -0.0, 1e-30, 8.0, -8.0))
    return Inputs((a,))


TOL = 5e-5  # float32 Householder reaches <= 6e-6 up to n = 128; a non-factorization is O(1) off


def check(inputs: Inputs, out) -> str | None:
    """Q R = A, Q^T Q = I and R upper triangular, each relative, worst matrix of the batch."""
    A = inputs.args[0].cpu().double()
    Q, R = (t.double() for t in out)
    *_, m, n = A.shape
    k = min(m, n)
    if tuple(Q.shape) != (*A.shape[:-2], m, k) or tuple(R.shape) != (*A.shape[:-2], k, n):
        return f"reduced mode needs Q {(m, k)} and R {(k, n)} per matrix"
    if not (torch.isfinite(Q).all() and torch.isfinite(R).all()):
        return "Q or R holds NaN or Inf"
    norm_a = torch.linalg.matrix_norm(A).clamp_min(1e-30)
    errors = {
        "||QR - A|| / ||A||": torch.linalg.matrix_norm(Q @ R - A) / norm_a,
        "||Q^T Q - I||": torch.linalg.matrix_norm(Q.mT @ Q - torch.eye(k, dtype=Q.dtype)),
        "||tril(R, -1)|| / ||A||": torch.linalg.matrix_norm(torch.tril(R, -1)) / norm_a,
    }
    for name, err in errors.items():
        worst = float(err.max())
        if not worst <= TOL:
            return f"{name} = {worst:.3g} > {TOL:g}"
    return None


TASK = Task(
    entry="qr",
    signature="qr(A, mode='reduced', out=None) -> tuple[torch.Tensor, torch.Tensor]",
    description=(
        "Reduced QR factorization like torch.linalg.qr: for a float32 tensor A of shape (m, n) or "
        "(b, m, n) with m >= n, return float32 (Q, R) with Q of shape (..., m, n) having "
        "orthonormal columns and R of shape (..., n, n) upper triangular, such that A = Q R. "
        "Only mode='reduced' (the default) is exercised, and `out` is never passed. The factors "
        "are unique only up to the signs of Q's columns and R's rows, so any signs are accepted: "
        "the output is judged by reconstruction, orthonormality and triangularity. Inputs are "
        "well-conditioned random matrices of at most 128 x 128."
    ),
    math=r"A = QR,\quad Q^\top Q = I_n,\quad R_{ij} = 0 \text{ for } i > j",
    precision=(
        "float32 in and out, computed in float32 (TF32 is not allowed in any product); checked in "
        f"float64: ||QR - A||_F/||A||_F, ||Q^T Q - I||_F and ||tril(R,-1)||_F/||A||_F <= {TOL:g}."
    ),
    version=2,  # benchmark batches of ~100 ms eager calls (docs/design/task-changes.md)
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 23), seed=1),
        Case((3, 64, 41), seed=2),
        Case((50, 1), seed=3),
        Case((29, 29), seed=4, dist="outlier"),
        Case((2, 97, 13), seed=5, dist="corner"),
    ),
    bench=(
        Case((1024, 96, 64), seed=11),
        Case((1024, 128, 128), seed=12),
    ),
    # Householder: 2mn^2 - 2n^3/3 for R and as much again to form Q; read A, write Q and R
    flops=lambda c: (
        numel(c.shape[:-2]) * (4.0 * c.shape[-2] * c.shape[-1] ** 2 - 4.0 * c.shape[-1] ** 3 / 3)
    ),
    bytes_moved=lambda c: 4.0 * numel(c.shape[:-2]) * (2 * numel(c.shape[-2:]) + c.shape[-1] ** 2),
    tolerance=Tolerance(rtol=TOL, atol=TOL),
    check=check,
)
