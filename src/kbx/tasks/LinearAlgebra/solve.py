"""LinearAlgebra/solve: solve square linear systems A X = B, batched, matrix or vector B."""

import torch

from kbx.suite.inputs import Draw, numel, spectral_norm
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = 2e-5  # float32 solves reach ~5e-7 here; fp16-rounded inputs or outputs ~3e-4
# signed zeros and moderate spikes: huge or tiny entries would leave most of X below tolerance
SPECIALS = (0.0, -0.0, 8.0, -8.0)


def reference(A, B):
    return torch.linalg.solve(A, B)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (..., n, k): A (..., n, n) = shuffled rows of 3 D + 2 E / ||E||_2 (singular values
    in [1, 5]); B (..., n, k), or (..., n) with vector=True; corner A scaled by 1e-3..1e3.
    Benchmark sizes are drawn on the GPU (``Draw.sized``): on the CPU they took
    12-21 s of a child's setup on one CPU thread on the H200 (2026-11-30)."""
    d = Draw.sized(case, device)
    *batch, n, k = case.shape
    e = d.tensor((*batch, n, n), dtype=torch.float64, specials=SPECIALS)
    e = e / spectral_norm(e).clamp_min(1e-300)[..., None, None]
    sign = torch.where(d.uniform((*batch, n), 0, 1, dtype=torch.float64) < 0.5, -1.0, 1.0)
    a = 3 * torch.diag_embed(sign) + 2 * e
    perm = d.uniform((*batch, n), 0, 1, dtype=torch.float64).argsort(dim=-1)
    a = a.gather(-2, perm[..., None].expand_as(a))
    if case.dist == "corner":
        a = a * 10 ** d.uniform((*batch, 1, 1), -3, 3, dtype=torch.float64)
    shape_b = (*batch, n) if case.params.get("vector") else case.shape
    b = d.tensor(shape_b, dtype=torch.float64, specials=SPECIALS)
    return Inputs((a.to(case.dtype).to(device), b.to(case.dtype).to(device)))


def check(inputs: Inputs, out: torch.Tensor) -> str | None:
    """X is unique: compare with float64, relative to the largest entry of each system's X
    (on the inputs' device)."""
    A, B = (t.double() for t in inputs.args)
    vector = B.dim() == A.dim() - 1
    want = torch.linalg.solve(A, B)
    got = out.to(A.device).double()
    if vector:
        want, got = want[..., None], got[..., None]
    err = (got - want).abs().amax(dim=(-2, -1)) / want.abs().amax(dim=(-2, -1))
    worst = float(err.max())
    if not worst <= TOL:
        return f"max |X - X_true| / max |X_true| = {worst:.3g} > {TOL:g} (worst system)"
    return None


TASK = Task(
    entry="solve",
    signature="solve(A, B)",
    description=(
        "Solve A X = B like torch.linalg.solve (left=True): A is float32 (..., n, n), B float32 "
        "(..., n, k) or a batch of vectors (..., n) (B.dim() == A.dim() - 1, torch's vector "
        "rule); return X of B's shape, float32. Batch dimensions of A and B are equal. A is "
        "nonsingular and well-conditioned (singular values in [1, 5]) with shuffled rows, so "
        "Gaussian elimination must pivot; the corner case scales each A by 1e-3..1e3 and puts "
        "signed zeros and +-8 entries in A's random part and in B. n ranges 1..45, k 1..20."
    ),
    math=r"X = A^{-1} B",
    precision=(
        "float32 in and out, computed in float32 (no TF32). X is unique; it is compared per "
        "system with the float64 solution for the same float32 inputs: "
        f"max|X - X64| / max|X64| <= {TOL:g}."
    ),
    reference=reference,
    make_inputs=make_inputs,
    version=2,  # benchmark inputs drawn and checks run on the GPU (2026-11-30)
    cases=(
        Case((37, 5), seed=1),
        Case((4, 24, 24), seed=2, dist="outlier", params={"vector": True}),
        Case((5, 1, 3), seed=3, dist="corner"),
        Case((3, 19, 20), seed=4, dist="corner"),
        Case((45, 1), seed=5, params={"vector": True}),
        Case((2, 3, 33, 7), seed=6),
    ),
    bench=(
        Case((16384, 32, 32), seed=11),
        Case((4096, 64, 64), seed=12),
    ),
    flops=lambda c: (
        numel(c.shape[:-2]) * (2.0 * c.shape[-2] ** 3 / 3 + 2.0 * c.shape[-2] ** 2 * c.shape[-1])
    ),
    bytes_moved=lambda c: (
        4.0
        * numel(c.shape[:-2])
        * (c.shape[-2] ** 2 + 2 * c.shape[-2] * (1 if c.params.get("vector") else c.shape[-1]))
    ),
    tolerance=Tolerance(rtol=TOL, atol=TOL),
    check=check,
)
