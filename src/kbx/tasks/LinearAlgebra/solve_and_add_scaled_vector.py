"""LinearAlgebra/solve_and_add_scaled_vector: x = A^-1 b for upper triangular A, plus alpha * y."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = 2e-5  # float32 substitution reaches ~3e-7 here; fp16-rounded inputs or outputs ~3e-4
# signed zeros and moderate spikes: huge or tiny entries would leave most of x below tolerance
SPECIALS = (0.0, -0.0, 8.0, -8.0)


def reference(A: torch.Tensor, b: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    x = torch.linalg.solve_triangular(A, b, upper=True)
    x += alpha * y
    return x


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (..., n, k). Upper triangle of A: D + N / (2 ||N||_F) with |D_ii| in [1, 2] of
    random sign and N strictly upper (||N||_F >= ||N||_2, so singular values in [0.5, 2.5]); its
    strict lower triangle holds noise that must be ignored. y is (..., n, k), or (k,) with
    row_y=True. Benchmark sizes are drawn on the GPU (``Draw.sized``): on the CPU they took
    41-51 s of a child's setup on the H200 host (2026-11-30)."""
    d = Draw.sized(case, device)
    *batch, n, k = case.shape
    noise = d.tensor((*batch, n, n), dtype=torch.float64)
    upper = torch.triu(noise, 1)
    upper = upper / (2 * torch.linalg.matrix_norm(upper).clamp_min(1e-300)[..., None, None])
    diag = d.uniform((*batch, n), 1, 2, dtype=torch.float64)
    diag = torch.where(d.uniform((*batch, n), 0, 1, dtype=torch.float64) < 0.5, -diag, diag)
    a = torch.tril(noise, -1) + torch.diag_embed(diag) + upper
    b = d.tensor(case.shape, dtype=torch.float64, specials=SPECIALS)
    shape_y = (k,) if case.params.get("row_y") else case.shape
    y = d.tensor(shape_y, dtype=torch.float64, specials=SPECIALS)
    f32 = [t.to(case.dtype).to(device) for t in (a, b, y)]
    return Inputs((*f32, case.params["alpha"]))


def check(inputs: Inputs, out: torch.Tensor) -> str | None:
    """x is unique: compare with float64, relative to the largest entry of each system's x
    (on the inputs' device)."""
    A, b, y = (t.double() for t in inputs.args[:3])
    want = torch.linalg.solve_triangular(A, b, upper=True) + inputs.args[3] * y
    got = out.to(A.device).double()
    err = (got - want).abs().amax(dim=(-2, -1)) / want.abs().amax(dim=(-2, -1))
    worst = float(err.max())
    if not worst <= TOL:
        return f"max |x - x_true| / max |x_true| = {worst:.3g} > {TOL:g} (worst system)"
    return None


TASK = Task(
    entry="solve_and_add_scaled_vector",
    signature=(
        "solve_and_add_scaled_vector(A: torch.Tensor, b: torch.Tensor, y: torch.Tensor, "
        "alpha: float) -> torch.Tensor"
    ),
    description=(
        "Solve the upper triangular system A x = b, then add alpha * y: A is float32 "
        "(..., n, n) and only its upper triangle (diagonal included) is read, as in "
        "torch.linalg.solve_triangular(A, b, upper=True) - the strict lower triangle holds noise "
        "that must be ignored; b is float32 (..., n, k) (torch needs a matrix right-hand side); "
        "y is float32 of b's shape or (k,), broadcast over the rows; alpha is a Python float "
        "(0 included). Return x + alpha * y, float32 of b's shape. The triangular part is "
        "well-conditioned (singular values in [0.5, 2.5], diagonal of both signs); the corner "
        "case puts signed zeros and +-8 entries in b and y. n ranges 1..45, k 1..16, "
        "batched or not."
    ),
    math=r"x = \mathrm{triu}(A)^{-1} b + \alpha y",
    precision=(
        "float32 in and out, computed in float32 (no TF32). x is unique; it is compared per "
        "system with the float64 result for the same float32 inputs: "
        f"max|x - x64| / max|x64| <= {TOL:g}."
    ),
    reference=reference,
    make_inputs=make_inputs,
    version=2,  # Frobenius-scaled upper part; benchmark inputs drawn on the GPU (2026-11-30)
    cases=(
        Case((37, 5), seed=1, params={"alpha": 0.5}),
        Case((4, 24, 3), seed=2, dist="outlier", params={"alpha": -1.25, "row_y": True}),
        Case((3, 1, 1), seed=3, params={"alpha": 2.0}),
        Case((5, 19, 7), seed=4, dist="corner", params={"alpha": 0.75}),
        Case((2, 3, 45, 16), seed=5, params={"alpha": 0.0}),
    ),
    bench=(
        Case((8192, 64, 64), seed=11, params={"alpha": 0.5}),
        Case((2048, 128, 128), seed=12, params={"alpha": -2.0, "row_y": True}),
    ),
    flops=lambda c: (
        numel(c.shape[:-2]) * (c.shape[-2] ** 2 * c.shape[-1] + 2.0 * numel(c.shape[-2:]))
    ),
    bytes_moved=lambda c: (
        4.0 * numel(c.shape[:-2]) * (c.shape[-2] ** 2 / 2 + 3 * numel(c.shape[-2:]))
    ),
    tolerance=Tolerance(rtol=TOL, atol=TOL),
    check=check,
)
