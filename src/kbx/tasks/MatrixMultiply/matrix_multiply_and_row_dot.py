"""MatrixMultiply/matrix_multiply_and_row_dot: dot of rows 0 and 1 of alpha * A @ B + beta * C."""

import torch

from kbx.suite.inputs import Draw
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)


def reference(A, B, alpha, beta, C):
    C = alpha * torch.mm(A, B) + beta * C
    return torch.dot(C[0], C[1])


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (n, m, p); params alpha, beta."""
    n, m, p = case.shape
    d = Draw(case, device)
    a = d.tensor((n, m), specials=SPECIALS)
    b = d.tensor((m, p), specials=SPECIALS, scale=m**-0.5)  # rows of A @ B are O(1)
    c = d.tensor((n, p), specials=SPECIALS)
    return Inputs((a, b, case.params["alpha"], case.params["beta"], c))


TASK = Task(
    entry="matrix_multiply_and_row_dot",
    signature=(
        "matrix_multiply_and_row_dot(A: torch.Tensor, B: torch.Tensor, alpha: float, "
        "beta: float, C: torch.Tensor) -> torch.Tensor"
    ),
    description=(
        "With float32 `A` (n, m), `B` (m, p) and `C` (n, p), n >= 2, and Python floats `alpha`, "
        "`beta`: form D = alpha * (A @ B) + beta * C and return the dot product of its first "
        "two rows, sum_j D[0, j] * D[1, j], as a 0-d float32 tensor. `C` is not modified (the "
        "update is out of place). Rows 2.. of A and C do not influence the result."
    ),
    math=r"r = \sum_j D_{0j} D_{1j},\quad D = \alpha AB + \beta C",
    precision=(
        "float32 in and out, products and sums accumulated in float32. TF32 (or any "
        "reduced-mantissa rounding of A and B, e.g. Triton's default tl.dot) is not allowed: "
        "it moves the result by ~5e-4 relative, far outside the tolerance rtol=2e-5, "
        "atol=1e-5 (the result is a sum of p random-sign terms of size ~alpha^2, p = 70-300; "
        "fp32 summation in any order stays below 1e-6 relative)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((5, 211, 83), seed=1, params={"alpha": 1.0, "beta": 1.0}),
        Case((2, 257, 161), seed=2, dist="outlier", params={"alpha": 1.5, "beta": -0.5}),
        Case((37, 199, 277), seed=3, dist="corner", params={"alpha": -0.75, "beta": 2.0}),
        Case((9, 130, 301), seed=4, params={"alpha": 2.0, "beta": 0.0}),
        Case((3, 333, 71), seed=5, dist="outlier", params={"alpha": 0.5, "beta": 1.25}),
    ),
    bench=(
        Case((64, 8192, 8192), seed=11, params={"alpha": 1.0, "beta": 1.0}),
        Case((16, 16384, 4096), seed=12, params={"alpha": 0.5, "beta": 2.0}),
    ),
    # the minimal work: rows 0 and 1 of D only (all of B, two rows of A and C)
    flops=lambda c: 4.0 * c.shape[1] * c.shape[2] + 8.0 * c.shape[2],
    bytes_moved=lambda c: 4.0 * (2 * c.shape[1] + c.shape[1] * c.shape[2] + 2 * c.shape[2] + 1),
    tolerance=Tolerance(rtol=2e-5, atol=1e-5),
)
