"""LinearAlgebra/solve_symmetric_ldl: solve symmetric indefinite systems through LDL^T."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = 2e-5  # float32 LDL^T solves reach ~4e-7 here; fp16-rounded inputs or outputs ~3e-4
# corner entries: signed zeros, a tiny value and moderate spikes keep the structure dense
SPECIALS = (0.0, -0.0, 1e-30, 8.0, -8.0)
# corner right-hand sides: signed zeros and moderate spikes (huge or tiny ones would leave
# most of the solution below the tolerance's resolution)
RHS_SPECIALS = (0.0, -0.0, 8.0, -8.0)


def reference(A, b, hermitian=False, out=None):
    LD, pivots = torch.linalg.ldl_factor(A, hermitian=hermitian)
    vector = b.dim() == A.dim() - 1
    x = torch.linalg.ldl_solve(LD, pivots, b.unsqueeze(-1) if vector else b, hermitian=hermitian)
    x = x.squeeze(-1) if vector else x
    return out.copy_(x) if out is not None else x


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (..., n, k). A symmetric, indefinite, strictly diagonally dominant: off-diagonal
    (G + G^T) / 2 with row sums r_i, diagonal +-(r_i (1 + u_i) + 0.1), u_i in [0.25, 1]
    (corner: times 1e-3..1e3 per matrix). b is (..., n, k), or (..., n) with vector=True."""
    d = Draw(case, "cpu")
    *batch, n, k = case.shape
    g = d.tensor((*batch, n, n), dtype=torch.float64, specials=SPECIALS)
    off = torch.tril(g, -1) + torch.tril(g, -1).mT
    r = off.abs().sum(-1)
    u = d.uniform((*batch, n), 0.25, 1, dtype=torch.float64)
    sign = torch.where(d.uniform((*batch, n), 0, 1, dtype=torch.float64) < 0.5, -1.0, 1.0)
    a = off + torch.diag_embed(sign * (r * (1 + u) + 0.1))
    if case.dist == "corner":
        a = a * 10 ** d.uniform((*batch, 1, 1), -3, 3, dtype=torch.float64)
    shape_b = (*batch, n) if case.params.get("vector") else case.shape
    b = d.tensor(shape_b, dtype=torch.float64, specials=RHS_SPECIALS)
    f32 = [t.to(case.dtype).to(device) for t in (a, b)]
    return Inputs((*f32, case.params.get("hermitian", False)))


def check(inputs: Inputs, out: torch.Tensor) -> str | None:
    """x is unique: compare with float64, relative to the largest entry of each system's x."""
    A, b = (t.cpu().double() for t in inputs.args[:2])
    want, got = torch.linalg.solve(A, b), out.cpu().double()
    if b.dim() == A.dim() - 1:
        want, got = want[..., None], got[..., None]
    err = (got - want).abs().amax(dim=(-2, -1)) / want.abs().amax(dim=(-2, -1))
    worst = float(err.max())
    if not worst <= TOL:
        return f"max |x - x_true| / max |x_true| = {worst:.3g} > {TOL:g} (worst system)"
    return None


TASK = Task(
    entry="solve_symmetric_ldl",
    version=3,  # benchmark batches of ~100 ms eager calls (docs/design/task-changes.md)
    signature="solve_symmetric_ldl(A, b, hermitian=False, out=None)",
    description=(
        "Solve the symmetric system A x = b through an LDL^T factorization of A (forward "
        "substitution with L, division by D, back substitution with L^T). A is float32 "
        "(..., n, n), symmetric and indefinite; b is float32 (..., n, k) or a batch of vectors "
        "(..., n) (b.dim() == A.dim() - 1); return x of b's shape, float32. Batch dimensions "
        "of A and b are equal. A is strictly diagonally dominant with diagonal entries of both "
        "signs, so LDL^T needs no pivoting; the corner case scales each A by 1e-3..1e3 and puts "
        "signed zeros and +-8 entries in b. hermitian has no effect on real input. n "
        "ranges 1..45, k 1..16. `out` is never passed."
    ),
    math=r"A = L D L^\top:\quad L z = b,\ y = D^{-1} z,\ L^\top x = y",
    precision=(
        "float32 in and out, computed in float32 (no TF32). x is unique; it is compared per "
        "system with the float64 solution for the same float32 inputs: "
        f"max|x - x64| / max|x64| <= {TOL:g}."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 4), seed=1),
        Case((5, 24, 1), seed=2, dist="outlier", params={"vector": True}),
        Case((6, 1, 2), seed=3, dist="corner"),
        Case((4, 19, 7), seed=4, dist="corner", params={"hermitian": True}),
        Case((2, 3, 45, 16), seed=5),
    ),
    bench=(  # small batches: eager eig / LDL^T on the GPU loop over the batch
        Case((64, 32, 32), seed=11),
        Case((32, 64, 1), seed=12, params={"vector": True}),
    ),
    flops=lambda c: (
        numel(c.shape[:-2]) * (c.shape[-2] ** 3 / 3.0 + 2.0 * c.shape[-2] ** 2 * c.shape[-1])
    ),
    bytes_moved=lambda c: 4.0 * numel(c.shape[:-2]) * (c.shape[-2] ** 2 + 2 * numel(c.shape[-2:])),
    tolerance=Tolerance(rtol=TOL, atol=TOL),
    check=check,
)
