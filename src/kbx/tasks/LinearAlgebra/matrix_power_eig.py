"""LinearAlgebra/matrix_power_eig: real, possibly fractional matrix power through eig."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = 5e-5  # float32 results reach ~2e-6 here; fp16-rounded inputs or outputs >= 2e-4
# corner entries: signed zeros, a tiny value and moderate spikes keep the structure dense
SPECIALS = (0.0, -0.0, 1e-30, 8.0, -8.0)


def reference(A: torch.Tensor, k: float, *, out: torch.Tensor = None) -> torch.Tensor:
    L, V = torch.linalg.eig(A)
    Ak = V @ torch.diag_embed(L**k) @ torch.linalg.inv(V)
    return out.copy_(Ak) if out is not None else Ak


def make_inputs(case: Case, device: str) -> Inputs:
    """A = V diag(lam) V^-1: V = 3 D + 2 E / ||E||_2 (singular values in [1, 5]); lam on a
    jittered grid over [0.5, 2.5] (gaps >= 0.8 / n), positive, or of random sign with
    mixed=True (then k is an integer); corner matrices are scaled by 10^(-1..1)."""
    d = Draw(case, "cpu")
    *batch, n, _ = case.shape
    grid = (
        torch.arange(n, dtype=torch.float64) + d.uniform((*batch, n), 0.3, 0.7, dtype=torch.float64)
    ) / n
    lam = 0.5 + 2 * grid
    if case.params.get("mixed"):
        lam = lam * torch.where(d.uniform((*batch, n), 0, 1, dtype=torch.float64) < 0.5, -1.0, 1.0)
    e = d.tensor(case.shape, dtype=torch.float64, specials=SPECIALS)
    e = e / torch.linalg.matrix_norm(e, ord=2).clamp_min(1e-300)[..., None, None]
    sign = torch.where(d.uniform((*batch, n), 0, 1, dtype=torch.float64) < 0.5, -1.0, 1.0)
    v = 3 * torch.diag_embed(sign) + 2 * e
    a = torch.linalg.solve(v.mT, (v * lam[..., None, :]).mT).mT  # V diag(lam) V^-1
    if case.dist == "corner":
        a = a * 10 ** d.uniform((*batch, 1, 1), -1, 1, dtype=torch.float64)
    return Inputs((a.to(case.dtype).to(device), case.params["k"]))


def check(inputs: Inputs, out: torch.Tensor) -> str | None:
    """A^k is unique here: compare with complex128, relative to each result's largest entry."""
    A, k = inputs.args[0].cpu().double(), inputs.args[1]
    L, V = torch.linalg.eig(A)
    want = V @ torch.diag_embed(L**k) @ torch.linalg.inv(V)
    got = out.cpu().to(torch.complex128)
    err = (got - want).abs().amax(dim=(-2, -1)) / want.abs().amax(dim=(-2, -1))
    worst = float(err.max())
    if not worst <= TOL:
        return f"max |X - A^k| / max |A^k| = {worst:.3g} > {TOL:g} (worst matrix)"
    return None


TASK = Task(
    entry="matrix_power_eig",
    version=3,  # benchmark batches of ~100 ms eager calls (docs/design/task-changes.md)
    signature=(
        "matrix_power_eig(A: torch.Tensor, k: float, *, out: torch.Tensor=None) -> torch.Tensor"
    ),
    description=(
        "Matrix power through the eigendecomposition: for a float32 tensor A (..., n, n) with "
        "A = V diag(lam) V^-1 and a real exponent k (Python float), return complex64 "
        "A^k = V diag(lam^k) V^-1 (..., n, n), lam^k on the principal branch as torch computes "
        "it. Inputs have real, distinct eigenvalues (|lam| in [0.5, 2.5], well-conditioned V): "
        "positive ones with fractional or negative k (0.5, -1.5, 2.5), or both signs with "
        "integer k (3, -2), so the result is real up to rounding and unique; any eigenvector "
        "scaling gives the same A^k. The corner case scales each matrix by 10^(-1..1). n "
        "ranges 1..13, batched or not. `out` is never passed."
    ),
    math=r"A^k = V \operatorname{diag}(\lambda_1^k, \dots, \lambda_n^k) V^{-1}",
    precision=(
        "float32 in, complex64 out, computed in float32 (no TF32). The result is compared per "
        "matrix with the complex128 power of the same float32 input: "
        f"max|X - A^k_128| / max|A^k_128| <= {TOL:g}."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((10, 10), seed=1, params={"k": 0.5}),
        Case((3, 8, 8), seed=2, dist="outlier", params={"k": -1.5}),
        Case((4, 1, 1), seed=3, dist="corner", params={"k": 2.5}),
        Case((2, 9, 9), seed=4, dist="corner", params={"k": 3.0, "mixed": True}),
        Case((13, 13), seed=5, params={"k": -2.0, "mixed": True}),
    ),
    bench=(  # small batches: eager eig / LDL^T on the GPU loop over the batch
        Case((32, 32, 32), seed=11, params={"k": 0.5}),
        Case((64, 16, 16), seed=12, params={"k": 3.0, "mixed": True}),
    ),
    # eigendecomposition (~22 n^3), inverse of V (2 n^3), two products (4 n^3)
    flops=lambda c: numel(c.shape[:-2]) * 28.0 * c.shape[-1] ** 3,
    bytes_moved=lambda c: 4.0 * numel(c.shape[:-2]) * 3 * c.shape[-1] ** 2,
    tolerance=Tolerance(rtol=TOL, atol=TOL),
    check=check,
)
