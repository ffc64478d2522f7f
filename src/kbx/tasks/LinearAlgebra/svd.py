"""LinearAlgebra/svd: singular value decomposition, judged by its defining properties."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = 5e-5  # float32 SVDs reach <= 3e-6 here; an SVD of fp16-rounded A is >= 1e-4 off


def reference(A, full_matrices=True):
    return torch.linalg.svd(A, full_matrices=full_matrices)


def make_inputs(case: Case, device: str) -> Inputs:
    """Random matrices in the case's distribution; with dup=True the last column of each matrix
    repeats the first, so one singular value is zero (up to float32 rounding)."""
    a = Draw(case, device).tensor(case.shape, specials=(0.0, -0.0, 1e-30, 8.0, -8.0))
    if case.params.get("dup"):
        a[..., -1] = a[..., 0]
    return Inputs((a,), {"full_matrices": case.params.get("full", True)})


def check(inputs: Inputs, out) -> str | None:
    """Orthonormal U and Vh, non-increasing S >= 0 matching float64, U diag(S) Vh = A."""
    A = inputs.args[0].cpu().double()
    U, S, Vh = (t.cpu().double() for t in out)
    m, n = A.shape[-2:]
    k = min(m, n)
    full = inputs.kwargs["full_matrices"]
    mu, nv = (m, n) if full else (k, k)
    if U.shape[-2:] != (m, mu) or Vh.shape[-2:] != (nv, n) or S.shape[-1:] != (k,):
        return f"need U {(m, mu)}, S {(k,)}, Vh {(nv, n)} per matrix"
    scale = A.abs().amax(dim=(-2, -1)).clamp_min(1e-30)
    s_true = torch.linalg.svdvals(A)
    recon = U[..., :, :k] @ torch.diag_embed(S) @ Vh[..., :k, :]
    errors = {
        "max|U diag(S) Vh - A| / max|A|": (recon - A).abs().amax(dim=(-2, -1)) / scale,
        "max|U^T U - I|": (U.mT @ U - torch.eye(mu, dtype=U.dtype)).abs(),
        "max|Vh Vh^T - I|": (Vh @ Vh.mT - torch.eye(nv, dtype=U.dtype)).abs(),
        "max|S - S_true| / S_max": (S - s_true).abs() / s_true[..., :1].clamp_min(1e-30),
        "S not non-increasing (S[i+1] - S[i]) / S_max": (S[..., 1:] - S[..., :-1])
        / s_true[..., :1],
        "min(S) < 0": -S,
    }
    for name, err in errors.items():
        worst = float(err.max()) if err.numel() else 0.0
        if not worst <= TOL:
            return f"{name} = {worst:.3g} > {TOL:g}"
    return None


def _bytes(c: Case) -> float:
    """A, and U, S and Vh written (U (m, m) and Vh (n, n) with full_matrices, else (m, k) and
    (k, n))."""
    m, n = c.shape[-2:]
    k = min(m, n)
    u, vh = (m * m, n * n) if c.params.get("full", True) else (m * k, k * n)
    return 4.0 * numel(c.shape[:-2]) * (m * n + u + k + vh)


TASK = Task(
    entry="svd",
    signature="svd(A, full_matrices=True)",
    description=(
        "Singular value decomposition like torch.linalg.svd: for a float32 tensor A of shape "
        "(..., m, n), k = min(m, n), return float32 (U, S, Vh) with A = U[..., :, :k] diag(S) "
        "Vh[..., :k, :], S (..., k) non-negative and non-increasing. full_matrices=True gives "
        "square orthogonal U (..., m, m) and Vh (..., n, n); full_matrices=False gives U "
        "(..., m, k) and Vh (..., k, n) with orthonormal columns / rows. Singular vectors are "
        "unique only up to sign (and rotation within repeated or zero singular values), so any "
        "valid choice is accepted: the output is judged by its properties. Inputs are random "
        "matrices (normal, outlier, corner entries), tall, wide and square up to 17 x 13; one "
        "case repeats a column so that a singular value is zero."
    ),
    math=(
        r"A = U \Sigma V^\top,\ U^\top U = I,\ V^\top V = I,\ "
        r"\sigma_1 \ge \dots \ge \sigma_k \ge 0"
    ),
    precision=(
        "float32 in and out, computed in float32 (no TF32). Checked in float64, worst matrix: "
        "max|U diag(S) Vh - A| / max|A|, max|U^T U - I|, max|Vh Vh^T - I|, "
        f"max|S - S64| / S64_max and any increase of S, all <= {TOL:g}."
    ),
    version=2,  # benchmark batches of ~100 ms eager calls (docs/design/task-changes.md)
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((13, 8), seed=1),
        Case((3, 9, 9), seed=2, dist="outlier", params={"full": False}),
        Case((2, 6, 11), seed=3),
        Case((17, 5), seed=4, dist="corner", params={"full": False}),
        Case((2, 10, 7), seed=5, dist="corner", params={"dup": True}),
        Case((4, 1, 3), seed=6),
    ),
    bench=(
        Case((4096, 32, 32), seed=11),
        Case((128, 48, 24), seed=12, params={"full": False}),
    ),
    # one-sided Jacobi: about 8 sweeps of n^2/2 rotations of two length-(m + n) column pairs
    flops=lambda c: numel(c.shape[:-2]) * 8 * 3.0 * min(c.shape[-2:]) ** 2 * sum(c.shape[-2:]),
    bytes_moved=_bytes,
    tolerance=Tolerance(rtol=TOL, atol=TOL),
    check=check,
)
