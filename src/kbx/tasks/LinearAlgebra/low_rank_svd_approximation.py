"""LinearAlgebra/low_rank_svd_approximation: best rank-k approximation through the SVD."""

import torch

from kbx.suite.derived import with_spectrum
from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = 5e-5  # float32 results reach ~2e-6 here; fp16-rounded inputs or outputs >= 1.5e-4


def reference(A, k, *, full_matrices=True, out=None):
    U, S, Vh = torch.linalg.svd(A, full_matrices=full_matrices)
    Ak = U[..., :k] @ torch.diag_embed(S[..., :k]) @ Vh[..., :k, :]
    return out.copy_(Ak) if out is not None else Ak


def make_inputs(case: Case, device: str) -> Inputs:
    """A = U diag(s) V^T with random orthonormal U, V: the k leading singular values in [1, 3],
    the others in [0, 0.3] (in the corner case half of them exactly 0, and A scaled by
    1e-3..1e3), so the rank-k approximation is well separated from the rest."""
    d = Draw(case, "cpu")
    *batch, m, n = case.shape
    p, k = min(m, n), case.params["k"]
    top = d.uniform((*batch, k), 1, 3, dtype=torch.float64).sort(dim=-1, descending=True)[0]
    rest = d.uniform((*batch, p - k), 0, 0.3, dtype=torch.float64)
    if case.dist == "corner":
        rest = torch.where(d.uniform(rest.shape, 0, 1, dtype=torch.float64) < 0.5, 0.0, rest)
    s = torch.cat([top, rest], dim=-1)
    a = with_spectrum(d, s, m, n)
    if case.dist == "corner":
        a = a * 10 ** d.uniform((*batch, 1, 1), -3, 3, dtype=torch.float64)
    full = case.params.get("full", True)
    return Inputs((a.to(case.dtype).to(device), k), {"full_matrices": full})


def check(inputs: Inputs, out: torch.Tensor) -> str | None:
    """A_k is unique (gap after s_k): compare with float64, relative to each A_k's largest."""
    A, k = inputs.args[0].cpu().double(), inputs.args[1]
    U, S, Vh = torch.linalg.svd(A, full_matrices=False)
    want = U[..., :k] @ torch.diag_embed(S[..., :k]) @ Vh[..., :k, :]
    err = (out.cpu().double() - want).abs().amax(dim=(-2, -1)) / want.abs().amax(dim=(-2, -1))
    worst = float(err.max())
    if not worst <= TOL:
        return f"max |A_k - A_k,true| / max |A_k,true| = {worst:.3g} > {TOL:g} (worst matrix)"
    return None


TASK = Task(
    entry="low_rank_svd_approximation",
    signature="low_rank_svd_approximation(A, k, *, full_matrices=True, out=None)",
    description=(
        "Best rank-k approximation of each matrix (Eckart-Young): A_k = U_k diag(S_k) Vh_k from "
        "the SVD of the float32 tensor A (..., m, n), keeping the k largest singular values "
        "(1 <= k <= min(m, n), a Python int); return float32 A_k of A's shape. full_matrices "
        "does not change the result (both values are exercised). Inputs are built with a clear "
        "gap after the k-th singular value (leading ones in [1, 3], the rest in [0, 0.3]), so "
        "A_k is unique; in the corner case about half of the trailing singular values are "
        "exactly zero (in float64, before rounding) and A is scaled by 1e-3..1e3. Tall, wide "
        "and square shapes up to 16 x 13, k from 1 to min(m, n) - 1. `out` is never passed."
    ),
    math=(
        r"A_k = \sum_{i \le k} \sigma_i u_i v_i^\top"
        r" = \arg\min_{\mathrm{rank}\,B \le k} \|A - B\|_F"
    ),
    precision=(
        "float32 in and out, computed in float32 (no TF32). A_k is compared per matrix with "
        "the float64 rank-k approximation of the same float32 input: "
        f"max|A_k - A_k,64| / max|A_k,64| <= {TOL:g}."
    ),
    version=2,  # benchmark batches of ~100 ms eager calls (docs/design/task-changes.md)
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((13, 8), seed=1, params={"k": 3}),
        Case((3, 9, 9), seed=2, dist="outlier", params={"k": 5, "full": False}),
        Case((2, 6, 11), seed=3, params={"k": 1}),
        Case((16, 5), seed=4, params={"k": 4}),
        Case((2, 10, 7), seed=5, dist="corner", params={"k": 4}),
    ),
    bench=(
        Case((4096, 32, 32), seed=11, params={"k": 8}),
        Case((128, 48, 24), seed=12, params={"k": 12, "full": False}),
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
