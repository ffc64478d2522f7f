"""LinearAlgebra/pseudoinverse_svd: Moore-Penrose pseudoinverse through the SVD, with a cutoff."""

import torch

from kbx.suite.derived import with_spectrum
from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = 5e-5  # float32 results reach ~2e-6 here; fp16-rounded inputs or outputs >= 1.5e-4


def reference(A, full_matrices=True, rcond=1e-15, out=None):
    U, S, Vh = torch.linalg.svd(A, full_matrices=full_matrices)
    k = S.shape[-1]
    cutoff = rcond * S.max(dim=-1, keepdim=True).values
    s_inv = torch.where(cutoff < S, 1 / S, torch.zeros_like(S))
    pinv = Vh[..., :k, :].mT @ torch.diag_embed(s_inv) @ U[..., :, :k].mT
    return out.copy_(pinv) if out is not None else pinv


def make_inputs(case: Case, device: str) -> Inputs:
    """A = U diag(s) V^T with random orthonormal U, V and s in [0.5, 2]; with params rank=r
    only r singular values are nonzero (in float64, before rounding to float32), and rcond
    (1e-3 there) cuts the rounding-level rest. Corner matrices are scaled by 1e-3..1e3."""
    d = Draw(case, "cpu")
    *batch, m, n = case.shape
    p = min(m, n)
    s = d.uniform((*batch, p), 0.5, 2, dtype=torch.float64)
    s[..., case.params.get("rank", p) :] = 0
    a = with_spectrum(d, s, m, n)
    if case.dist == "corner":
        a = a * 10 ** d.uniform((*batch, 1, 1), -3, 3, dtype=torch.float64)
    kwargs = {
        "full_matrices": case.params.get("full", True),
        "rcond": case.params.get("rcond", 1e-15),
    }
    return Inputs((a.to(case.dtype).to(device),), kwargs)


def check(inputs: Inputs, out: torch.Tensor) -> str | None:
    """A^+ is unique for these inputs: compare with float64 (same cutoff rule), per matrix."""
    A = inputs.args[0].cpu().double()
    U, S, Vh = torch.linalg.svd(A, full_matrices=False)
    keep = inputs.kwargs["rcond"] * S[..., :1] < S
    want = Vh.mT @ torch.diag_embed(torch.where(keep, 1 / S, 0)) @ U.mT
    err = (out.cpu().double() - want).abs().amax(dim=(-2, -1)) / want.abs().amax(dim=(-2, -1))
    worst = float(err.max())
    if not worst <= TOL:
        return f"max |X - A^+| / max |A^+| = {worst:.3g} > {TOL:g} (worst matrix)"
    return None


TASK = Task(
    entry="pseudoinverse_svd",
    signature="pseudoinverse_svd(A, full_matrices=True, rcond=1e-15, out=None)",
    description=(
        "Moore-Penrose pseudoinverse through the SVD: for a float32 tensor A (..., m, n) with "
        "A = U diag(S) Vh, return float32 A^+ = Vh^T diag(S^+) U^T of shape (..., n, m), where "
        "S^+_i = 1 / S_i if S_i > rcond * max(S) else 0. full_matrices does not change the "
        "result. Full-rank cases use the default rcond=1e-15 with singular values in [0.5, 2]; "
        "rank-deficient cases (rank r < min(m, n) before rounding to float32) pass rcond=1e-3, "
        "which removes exactly the rounding-level singular values, so A^+ is well defined. The "
        "corner case scales each matrix by 1e-3..1e3. Tall, wide and square shapes up to "
        "16 x 13. `out` is never passed."
    ),
    math=(
        r"A^+ = V \Sigma^+ U^\top,\ \sigma_i^+ = 1/\sigma_i\ "
        r"(\sigma_i > \mathrm{rcond}\,\sigma_1),\ 0\ \text{otherwise}"
    ),
    precision=(
        "float32 in and out, computed in float32 (no TF32). A^+ is compared per matrix with "
        "the float64 pseudoinverse (same cutoff rule) of the same float32 input: "
        f"max|X - A^+_64| / max|A^+_64| <= {TOL:g}."
    ),
    version=2,  # benchmark batches of ~100 ms eager calls (docs/design/task-changes.md)
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((13, 8), seed=1),
        Case((3, 9, 9), seed=2, dist="outlier", params={"full": False}),
        Case((2, 6, 11), seed=3, params={"rank": 4, "rcond": 1e-3}),
        Case((16, 5), seed=4, params={"rank": 2, "rcond": 1e-3, "full": False}),
        Case((2, 10, 7), seed=5, dist="corner"),
    ),
    bench=(
        Case((4096, 32, 32), seed=11),
        Case((128, 48, 24), seed=12, params={"rank": 16, "rcond": 1e-3}),
    ),
    # one-sided Jacobi (about 8 sweeps of n^2/2 rotations of length-(m + n) column pairs) + product
    flops=lambda c: (
        numel(c.shape[:-2])
        * (
            8 * 3.0 * min(c.shape[-2:]) ** 2 * sum(c.shape[-2:])
            + 2.0 * numel(c.shape[-2:]) * min(c.shape[-2:])
        )
    ),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=TOL, atol=TOL),
    check=check,
)
