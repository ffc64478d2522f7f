"""LinearAlgebra/invert_matrix_lu: matrix inverse through an LU factorization, batched."""

import torch

from kbx.suite.inputs import Draw, numel, spectral_norm
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = 2e-5  # float32 LU inverses reach ~1e-6 here; fp16-rounded inputs or outputs ~3e-4
# signed zeros, tiny and moderate spikes: huge ones would make most of A^-1 negligibly small
SPECIALS = (0.0, -0.0, 1e-30, 8.0, -8.0)


def reference(A, *, pivot=True, out=None):
    # A^-1 = U^-1 L^-1 P^T with A = P L U: the inverse itself, whatever the pivoting
    return torch.linalg.inv(A, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    """3 D + 2 E / ||E||_2 (D = random signs): singular values in [1, 5], also of every leading
    block; rows shuffled where pivoting is on; corner matrices scaled by 1e-3..1e3.
    Benchmark sizes are drawn on the GPU (``Draw.sized``): on the CPU they took
    12-21 s of a child's setup on one CPU thread on the H200 (2026-11-30)."""
    d = Draw.sized(case, device)
    *batch, n, _ = case.shape
    e = d.tensor(case.shape, dtype=torch.float64, specials=SPECIALS)
    e = e / spectral_norm(e).clamp_min(1e-300)[..., None, None]
    sign = torch.where(d.uniform((*batch, n), 0, 1, dtype=torch.float64) < 0.5, -1.0, 1.0)
    a = 3 * torch.diag_embed(sign) + 2 * e
    pivot = case.params.get("pivot", True)
    if pivot:
        perm = d.uniform((*batch, n), 0, 1, dtype=torch.float64).argsort(dim=-1)
        a = a.gather(-2, perm[..., None].expand_as(a))
    if case.dist == "corner":
        a = a * 10 ** d.uniform((*batch, 1, 1), -3, 3, dtype=torch.float64)
    return Inputs((a.to(case.dtype).to(device),), {"pivot": pivot})


def check(inputs: Inputs, out: torch.Tensor) -> str | None:
    """The inverse is unique: compare with float64, relative to each inverse's largest entry
    (on the inputs' device)."""
    A = inputs.args[0].double()
    want = torch.linalg.inv(A)
    got = out.to(A.device).double()
    err = (got - want).abs().amax(dim=(-2, -1)) / want.abs().amax(dim=(-2, -1))
    worst = float(err.max())
    if not worst <= TOL:
        return f"max |X - A^-1| / max |A^-1| = {worst:.3g} > {TOL:g} (worst matrix)"
    return None


TASK = Task(
    entry="invert_matrix_lu",
    signature="invert_matrix_lu(A, *, pivot=True, out=None)",
    description=(
        "Matrix inverse through an LU factorization: for a float32 tensor A of shape (..., n, n) "
        "return the float32 inverse, same shape, from A = P L U as U^-1 L^-1 P^T. pivot=True "
        "uses partial pivoting (input rows are shuffled, so rows must be exchanged); "
        "pivot=False eliminates without row exchanges (every leading block of those inputs is "
        "well-conditioned). Inputs have singular values in [1, 5] (times 1e-3..1e3 per matrix "
        "in the corner case, which also holds signed zeros, tiny and +-8 entries); n ranges 1..45, "
        "batched or not. `out` is never passed."
    ),
    math=r"A^{-1} = U^{-1} L^{-1} P^\top,\quad A = P L U",
    precision=(
        "float32 in and out, computed in float32 (no TF32). The inverse is compared per matrix "
        "with the float64 inverse of the same float32 input: "
        f"max|X - A^-1| / max|A^-1| <= {TOL:g}."
    ),
    reference=reference,
    make_inputs=make_inputs,
    version=2,  # benchmark inputs drawn and checks run on the GPU (2026-11-30)
    cases=(
        Case((37, 37), seed=1),
        Case((5, 24, 24), seed=2, dist="outlier"),
        Case((6, 1, 1), seed=3, dist="corner"),
        Case((4, 19, 19), seed=4, dist="corner"),
        Case((2, 3, 45, 45), seed=5, params={"pivot": False}),
    ),
    bench=(
        Case((16384, 32, 32), seed=11),
        Case((4096, 64, 64), seed=12),
    ),
    flops=lambda c: numel(c.shape[:-2]) * 2.0 * c.shape[-1] ** 3,
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=TOL, atol=TOL),
    check=check,
)
