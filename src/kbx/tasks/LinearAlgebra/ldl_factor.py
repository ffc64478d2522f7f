"""LinearAlgebra/ldl_factor: compact LDL^T factorization of symmetric matrices (LAPACK format)."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = 2e-5  # float32 LDL^T reaches ~3e-7 here; fp16-rounded inputs or outputs >= 1e-4
# corner entries: signed zeros, a tiny value and moderate spikes keep the structure dense
SPECIALS = (0.0, -0.0, 1e-30, 8.0, -8.0)


def reference(A, hermitian=False, out=None):
    return torch.linalg.ldl_factor(A, hermitian=hermitian, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    """Symmetric, strictly diagonally dominant, indefinite: off-diagonal (G + G^T) / 2 with row
    sums r_i, diagonal +-(r_i (1 + u_i) + 0.1), u_i in [0.25, 1]; corner matrices scaled by
    1e-3..1e3. Every Schur complement stays dominant, so Bunch-Kaufman never pivots."""
    d = Draw(case, "cpu")
    *batch, n, _ = case.shape
    g = d.tensor(case.shape, dtype=torch.float64, specials=SPECIALS)
    off = torch.tril(g, -1) + torch.tril(g, -1).mT
    r = off.abs().sum(-1)
    u = d.uniform((*batch, n), 0.25, 1, dtype=torch.float64)
    sign = torch.where(d.uniform((*batch, n), 0, 1, dtype=torch.float64) < 0.5, -1.0, 1.0)
    a = off + torch.diag_embed(sign * (r * (1 + u) + 0.1))
    if case.dist == "corner":
        a = a * 10 ** d.uniform((*batch, 1, 1), -3, 3, dtype=torch.float64)
    return Inputs(
        (a.to(case.dtype).to(device),), {"hermitian": case.params.get("hermitian", False)}
    )


def check(inputs: Inputs, out) -> str | None:
    """Pivots exactly 1..n; D relative, L absolute (|L| < 1 here), upper triangle zero."""
    A = inputs.args[0].cpu().double()
    LD, pivots = out
    n = A.shape[-1]
    if not torch.equal(
        pivots.cpu(), torch.arange(1, n + 1, dtype=torch.int32).expand(pivots.shape)
    ):
        return "these inputs need no pivoting: pivots must be 1, 2, ..., n (LAPACK numbering)"
    want = torch.linalg.ldl_factor(A)[0]
    got = LD.cpu().double()
    d_want = want.diagonal(dim1=-2, dim2=-1)
    errors = {
        "max|D - D_true| / |D_true|": (got.diagonal(dim1=-2, dim2=-1) - d_want).abs()
        / d_want.abs(),
        "max|L - L_true|": torch.tril(got - want, -1).abs(),
        "max|triu(LD, 1)| / max|D|": torch.triu(got, 1).abs()
        / d_want.abs().amax(-1)[..., None, None],
    }
    for name, err in errors.items():
        worst = float(err.max()) if err.numel() else 0.0
        if not worst <= TOL:
            return f"{name} = {worst:.3g} > {TOL:g}"
    return None


TASK = Task(
    entry="ldl_factor",
    version=3,  # benchmark batches of ~100 ms eager calls (docs/design/task-changes.md)
    signature="ldl_factor(A, hermitian=False, out=None)",
    description=(
        "LDL^T factorization like torch.linalg.ldl_factor: for a float32 symmetric tensor A of "
        "shape (..., n, n) return (LD, pivots): LD float32 (..., n, n) holds the unit lower "
        "triangular L below the diagonal and D on the diagonal, zeros above, with A = L D L^T; "
        "pivots is int32 (..., n) in LAPACK's sytrf numbering (1-based; k+1 at position k "
        "means no interchange and a 1x1 block). The inputs are symmetric, indefinite and "
        "strictly diagonally dominant, so Bunch-Kaufman pivoting takes 1x1 blocks without "
        "interchanges: pivots must be exactly 1..n and the factors are unique. hermitian has no "
        "effect on real input (both values are exercised). n ranges 1..45, batched or not; the "
        "corner case scales each matrix by 1e-3..1e3. `out` is never passed."
    ),
    math=r"A = L D L^\top,\ L_{ii} = 1,\ D \text{ diagonal}",
    precision=(
        "float32 LD (int32 pivots), computed in float32 (no TF32). Checked against the float64 "
        f"factorization of the same float32 input: |D - D64|/|D64| <= {TOL:g} per entry, "
        f"|L - L64| <= {TOL:g}, the strict upper triangle of LD zero (<= {TOL:g} max|D|)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 37), seed=1),
        Case((5, 24, 24), seed=2, dist="outlier", params={"hermitian": True}),
        Case((6, 1, 1), seed=3, dist="corner"),
        Case((4, 19, 19), seed=4, dist="corner"),
        Case((2, 3, 45, 45), seed=5),
    ),
    bench=(  # small batches: eager eig / LDL^T on the GPU loop over the batch
        Case((64, 32, 32), seed=11),
        Case((32, 64, 64), seed=12, params={"hermitian": True}),
    ),
    flops=lambda c: numel(c.shape[:-2]) * c.shape[-1] ** 3 / 3.0,
    bytes_moved=lambda c: 8.0 * numel(c.shape) + 4.0 * numel(c.shape[:-1]),
    tolerance=Tolerance(rtol=TOL, atol=TOL),
    check=check,
)
