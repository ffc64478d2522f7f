"""LinearAlgebra/lu: LU factorization A = P L U, judged by its defining properties."""

import torch

from kbx.suite.inputs import Draw, numel, spectral_norm
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = 2e-5  # float32 LU reaches ~5e-7 here; LU of fp16-rounded A is ~2e-4 off, a wrong one O(1)
# corner entries: signed zeros, a tiny value and moderate spikes keep the structure dense
SPECIALS = (0.0, -0.0, 1e-30, 8.0, -8.0)


def lu_no_pivot(A: torch.Tensor):
    """Doolittle without row exchanges, for the CPU (torch implements pivot=False on CUDA only)."""
    m, n = A.shape[-2:]
    k = min(m, n)
    U, L = A.clone(), torch.eye(m, k, dtype=A.dtype).expand(*A.shape[:-2], m, k).clone()
    for j in range(k):
        mult = U[..., j + 1 :, j] / U[..., j : j + 1, j]
        L[..., j + 1 :, j] = mult
        U[..., j + 1 :, :] -= mult[..., None] * U[..., j : j + 1, :]
    return A.new_empty(0), L, torch.triu(U[..., :k, :])


def reference(A, pivot=True, out=None):
    if not pivot and not A.is_cuda:
        return lu_no_pivot(A)
    return torch.linalg.lu(A, pivot=pivot, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    """Leading m x n block of 3 D + 2 E / ||E||_2 (D = random signs): singular values >= 1, all
    leading minors too; with pivoting the rows are shuffled. Corner cases scale each matrix.
    Benchmark sizes are drawn on the GPU (``Draw.sized``): on the CPU they took
    12-21 s of a child's setup on one CPU thread on the H200 (2026-11-30)."""
    d = Draw.sized(case, device)
    *batch, m, n = case.shape
    p, pivot = max(m, n), case.params.get("pivot", True)
    e = d.tensor((*batch, p, p), dtype=torch.float64, specials=SPECIALS)
    e = e / spectral_norm(e).clamp_min(1e-300)[..., None, None]
    sign = torch.where(d.uniform((*batch, p), 0, 1, dtype=torch.float64) < 0.5, -1.0, 1.0)
    a = 3 * torch.diag_embed(sign) + 2 * e
    if pivot:
        perm = d.uniform((*batch, p), 0, 1, dtype=torch.float64).argsort(dim=-1)
        a = a.gather(-2, perm[..., None].expand_as(a))
    if case.dist == "corner":
        a = a * 10 ** d.uniform((*batch, 1, 1), -3, 3, dtype=torch.float64)
    return Inputs((a[..., :m, :n].to(case.dtype).to(device),), {"pivot": pivot})


def check(inputs: Inputs, out) -> str | None:
    A, pivot = inputs.args[0].double(), inputs.kwargs["pivot"]  # on the inputs' device
    P, L, U = (t.to(A.device).double() for t in out)
    m, n = A.shape[-2:]
    k = min(m, n)
    if L.shape != (*A.shape[:-2], m, k) or U.shape != (*A.shape[:-2], k, n):
        return f"need L {(m, k)} and U {(k, n)} per matrix"
    if not pivot:
        if P.numel():
            return "pivot=False returns an empty P (torch.Size([0]))"
        P = torch.eye(m, dtype=A.dtype, device=A.device)
    elif not (((P == 0) | (P == 1)).all() and (P.sum(-1) == 1).all() and (P.sum(-2) == 1).all()):
        return "P is not a permutation matrix (exact zeros and ones)"
    scale = A.abs().amax(dim=(-2, -1), keepdim=True)
    errors = {
        "max|PLU - A| / max|A|": (P @ L @ U - A).abs() / scale,
        "max|diag(L) - 1|": (L.diagonal(dim1=-2, dim2=-1) - 1).abs(),
        "max|triu(L, 1)|": torch.triu(L, 1).abs(),
        "max|tril(U, -1)| / max|A|": torch.tril(U, -1).abs() / scale,
    }
    if pivot:  # partial pivoting keeps every multiplier at most 1 in magnitude
        errors["max|L| - 1"] = L.abs() - 1
    for name, err in errors.items():
        worst = float(err.max())
        if not worst <= TOL:
            return f"{name} = {worst:.3g} > {TOL:g}"
    return None


def _bytes(c: Case) -> float:
    """A, and P (pivot=True), L and U written."""
    m, n = c.shape[-2:]
    k, pivot = min(m, n), c.params.get("pivot", True)
    return 4.0 * numel(c.shape[:-2]) * (m * n + (m * m if pivot else 0) + m * k + k * n)


TASK = Task(
    entry="lu",
    signature="lu(A, pivot=True, out=None)",
    description=(
        "LU factorization like torch.linalg.lu: for a float32 tensor A of shape (..., m, n), "
        "return float32 (P, L, U) with A = P L U, where k = min(m, n), L (..., m, k) is unit "
        "lower triangular and U (..., k, n) upper triangular. With pivot=True (partial "
        "pivoting) P (..., m, m) is a permutation matrix of exact zeros and ones and every "
        "|L_ij| <= 1; with pivot=False there are no row exchanges and P is an empty tensor of "
        "shape (0,), as torch returns on CUDA. Any valid choice among tied pivots is accepted: "
        "the factors are judged by their properties. Inputs are well-conditioned (singular "
        "values and those of every leading block >= 1, <= 5, times 1e-3..1e3 per matrix in the "
        "corner case); square, tall and wide shapes up to 40 x 40, batched or not. `out` is "
        "never passed."
    ),
    math=r"A = P L U,\ L_{ii} = 1,\ |L_{ij}| \le 1\ \text{(pivot=True)}",
    precision=(
        "float32 in and out, computed in float32 (no TF32). Checked in float64: "
        f"max|PLU - A|/max|A|, |diag(L) - 1|, |triu(L,1)|, |tril(U,-1)|/max|A| <= {TOL:g}; with "
        "pivoting also |L| <= 1 + tol and P exactly a permutation matrix."
    ),
    reference=reference,
    make_inputs=make_inputs,
    version=2,  # benchmark inputs drawn and checks run on the GPU (2026-11-30)
    cases=(
        Case((37, 37), seed=1),
        Case((4, 23, 17), seed=2, dist="outlier"),
        Case((3, 11, 29), seed=3),
        Case((5, 19, 19), seed=4, dist="corner"),
        Case((2, 40, 40), seed=5, params={"pivot": False}),
        Case((3, 1, 1), seed=6, dist="corner"),
    ),
    bench=(
        Case((16384, 32, 32), seed=11),
        Case((4096, 64, 64), seed=12),
    ),
    flops=lambda c: numel(c.shape[:-2]) * 2.0 * c.shape[-1] ** 3 / 3,
    bytes_moved=_bytes,
    tolerance=Tolerance(rtol=TOL, atol=TOL),
    check=check,
)
