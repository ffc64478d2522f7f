"""LinearAlgebra/determinant_via_qr: determinant as det(Q) * prod(diag(R)) of a QR factorization."""

import torch

from kbx.suite.inputs import Draw, numel, spectral_norm
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = 5e-5  # float32 QR: ~4e-6 at n = 48, ~1e-5 at n = 64; fp16-rounded inputs or output >= 1.7e-4
# corner entries: signed zeros, a tiny value and moderate spikes keep the structure dense
SPECIALS = (0.0, -0.0, 1e-30, 8.0, -8.0)


def reference(A, *, mode="reduced", out=None):
    Q, R = torch.linalg.qr(A, mode=mode)
    det = torch.det(Q) * R.diagonal(dim1=-2, dim2=-1).prod(-1)
    return out.copy_(det) if out is not None else det


def make_inputs(case: Case, device: str) -> Inputs:
    """Rows of 1.25 D + 0.75 E / ||E||_2 shuffled (D = random signs): singular values in
    [0.5, 2], so |det| stays within 2^+-n; corner matrices are also scaled by 2^+-2.
    Benchmark sizes are drawn on the GPU (``Draw.sized``): on the CPU they took
    12-21 s of a child's setup on one CPU thread on the H200 (2026-11-30)."""
    d = Draw.sized(case, device)
    *batch, n, _ = case.shape
    e = d.tensor(case.shape, dtype=torch.float64, specials=SPECIALS)
    e = e / spectral_norm(e).clamp_min(1e-300)[..., None, None]
    sign = torch.where(d.uniform((*batch, n), 0, 1, dtype=torch.float64) < 0.5, -1.0, 1.0)
    a = 1.25 * torch.diag_embed(sign) + 0.75 * e
    perm = d.uniform((*batch, n), 0, 1, dtype=torch.float64).argsort(dim=-1)
    a = a.gather(-2, perm[..., None].expand_as(a))
    if case.dist == "corner":
        a = a * 2 ** d.uniform((*batch, 1, 1), -2, 2, dtype=torch.float64)
    return Inputs((a.to(case.dtype).to(device),), {"mode": case.params.get("mode", "reduced")})


def check(inputs: Inputs, out: torch.Tensor) -> str | None:
    """Relative error of each determinant against float64 on the same float32 input (on the
    inputs' device)."""
    A = inputs.args[0].double()
    want = torch.linalg.det(A)
    err = (out.to(A.device).double() - want).abs() / want.abs()
    worst = float(err.max()) if err.numel() else 0.0
    if not worst <= TOL:
        return f"max |det - det_true| / |det_true| = {worst:.3g} > {TOL:g}"
    return None


TASK = Task(
    entry="determinant_via_qr",
    signature="determinant_via_qr(A, *, mode='reduced', out=None)",
    description=(
        "Determinant through a QR factorization: for a float32 tensor A of shape (..., n, n) "
        "return the float32 determinants, shape (...), as det(Q) * prod(diag(R)) with A = Q R "
        "(det(Q) = +-1 for the orthogonal Q; with Householder reflections it is (-1)^(number of "
        "reflections)). mode is 'reduced' or 'complete' (the same for square A); mode='r' "
        "is not exercised (it returns no Q). Inputs are nonsingular and well-conditioned "
        "(singular values in [0.5, 2], rows shuffled so that a pivoted elimination must "
        "exchange rows; determinants of both signs); the corner case adds signed zeros, tiny "
        "and spiked entries and a per-matrix scale 2^(-2..2). n ranges 1..48, with and without "
        "batch dimensions. `out` is never passed."
    ),
    math=r"\det A = \det Q \prod_i R_{ii},\quad A = Q R,\ \det Q = \pm 1",
    precision=(
        "float32 in and out, computed in float32 (no TF32). Each determinant is compared with "
        f"the float64 determinant of the same float32 matrix: relative error <= {TOL:g}."
    ),
    reference=reference,
    make_inputs=make_inputs,
    version=4,  # benchmark batches of ~100 ms eager calls (docs/design/task-changes.md)
    cases=(
        Case((37, 37), seed=1),
        Case((12, 24, 24), seed=2, dist="outlier"),
        Case((64, 1, 1), seed=3, dist="corner"),
        Case((24, 19, 19), seed=4, dist="corner", params={"mode": "complete"}),
        Case((2, 3, 48, 48), seed=5),
        Case((64, 5, 5), seed=6),
    ),
    bench=(
        Case((2048, 32, 32), seed=11),
        Case((2048, 64, 64), seed=12),
    ),
    flops=lambda c: numel(c.shape[:-2]) * 4.0 * c.shape[-1] ** 3 / 3,  # Householder R only
    bytes_moved=lambda c: 4.0 * numel(c.shape[:-2]) * (c.shape[-1] ** 2 + 1),
    tolerance=Tolerance(rtol=TOL, atol=0.0),
    check=check,
)
