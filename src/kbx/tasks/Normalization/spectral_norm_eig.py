"""Normalization/spectral_norm_eig: largest |eigenvalue| (spectral radius) of square matrices."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e3, -1e3, 1e-30)


def reference(A, *, out=None):
    eigenvalues, _ = torch.linalg.eig(A)
    spectral_norm, _ = torch.max(torch.abs(eigenvalues), dim=-1)
    if out is not None:
        out.copy_(spectral_norm)
        return out
    return spectral_norm


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (..., n, n); params: sym (symmetric matrices). Corner cases also hold a zero
    matrix, a strictly upper triangular one (spectral radius 0) and an upper triangular one."""
    a = Draw(case, device).tensor(case.shape, specials=SPECIALS)
    if case.params.get("sym"):
        a = a + a.mT
    if case.dist == "corner":
        flat = a.reshape(-1, *case.shape[-2:])
        flat[0] = 0.0
        flat[1] = flat[1].triu(1)
        flat[2] = flat[2].triu()
    return Inputs((a.to(device),))


TASK = Task(
    entry="spectral_norm_eig",
    signature="spectral_norm_eig(A, *, out=None)",
    description=(
        "Spectral radius of real square matrices: for a float32 `A` of shape (..., n, n), "
        "return max_i |lambda_i| over the (generally complex) eigenvalues of each matrix, a "
        "new float32 tensor of shape (...) (0-d for a single matrix). This is what the "
        "released task computes as max |eig(A)|; it equals the 2-norm only for normal "
        "matrices. Inputs are nonsymmetric Gaussian matrices (often with a complex-conjugate "
        "dominant pair), symmetric ones, outliers, and in the corner case a zero matrix, a "
        "strictly upper triangular matrix (radius 0) and an upper triangular one (radius = "
        "max |diagonal|); n <= 48 in the cases, 64 and 128 in the benchmark. `out` is never "
        "passed; float64 and complex inputs are not exercised. Eigenvectors are not needed: "
        "any method that yields the spectral radius is fine (Hessenberg QR, or Gelfand's "
        "formula rho = lim ||A^k||^(1/k) by repeated squaring, ...)."
    ),
    math=r"\rho(A) = \max_i |\lambda_i(A)| = \lim_{k\to\infty} \|A^k\|^{1/k}",
    precision=(
        "float32 in and out, computed in float32 (TF32 is not allowed in any product). "
        "Tolerance rtol=1e-4, atol=1e-6: float32 LAPACK and a float32 repeated-squaring "
        "method both stay within ~1e-5 relative of the float64 radius on these inputs."
    ),
    version=2,  # benchmark batches of ~100 ms eager calls (docs/design/task-changes.md)
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((6, 17, 17), seed=1),
        Case((4, 33, 33), seed=2, dist="outlier"),
        Case((8, 9, 9), seed=3, dist="corner"),
        Case((25, 25), seed=9),  # seed: a lone fp16-rounded scalar must miss rtol (see notes)
        Case((3, 5, 12, 12), seed=5, params={"sym": True}),
        Case((2, 48, 48), seed=6, dist="outlier"),
    ),
    bench=(
        Case((32, 64, 64), seed=11),  # small batches: eager torch.linalg.eig is slow on GPU
        Case((8, 128, 128), seed=12),
    ),
    # a LAPACK-style count for eigenvalues only (Hessenberg reduction + QR sweeps): ~10 n^3
    flops=lambda c: 10.0 * numel(c.shape[:-2]) * c.shape[-1] ** 3,
    bytes_moved=lambda c: 4.0 * (numel(c.shape) + numel(c.shape[:-2])),
    tolerance=Tolerance(rtol=1e-4, atol=1e-6),
)
