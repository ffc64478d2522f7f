"""MatrixMultiply/matrix_multiply_symmetric: C1 = a*A@B + b*C, then a*C1@C1^T + b*C1 (float32)."""

import torch

from kbx.suite.inputs import Draw
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)


def reference(A, B, C, alpha, beta):
    C = alpha * torch.mm(A, B) + beta * C
    return alpha * torch.mm(C, C.T) + beta * C


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (n, m): A (n, m), B (m, n), C (n, n); params alpha, beta."""
    n, m = case.shape
    d = Draw(case, device)
    a = d.tensor((n, m), specials=SPECIALS)
    b = d.tensor((m, n), specials=SPECIALS, scale=m**-0.5)  # entries of A @ B are O(1)
    c = d.tensor((n, n), specials=SPECIALS)
    return Inputs((a, b, c, case.params["alpha"], case.params["beta"]))


TASK = Task(
    entry="matrix_multiply_symmetric",
    signature=(
        "matrix_multiply_symmetric(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, "
        "alpha: float, beta: float) -> torch.Tensor"
    ),
    description=(
        "Two chained updates on float32 matrices: C1 = alpha * (A @ B) + beta * C, then "
        "out = alpha * (C1 @ C1^T) + beta * C1, returned as a new float32 (n, n) tensor. A is "
        "(n, m), B is (m, n) and C is (n, n): the second update only type-checks for square C. "
        "`alpha` and `beta` are Python floats (the cases use negative, fractional and zero "
        "beta). C is not modified. The first product has contraction length m, the second n."
    ),
    math=r"C_1 = \alpha AB + \beta C,\quad \mathrm{out} = \alpha C_1 C_1^\top + \beta C_1",
    precision=(
        "float32 in and out, both products accumulated in float32. TF32 (or any "
        "reduced-mantissa input rounding, e.g. Triton's default tl.dot) is not allowed in "
        "either product: use tl.dot(..., input_precision='ieee') or an exact fp32 emulation "
        "such as 'tf32x3'. Tolerance rtol=1e-4, atol=3e-3 (entries of C1 are O(1) and the "
        "second contraction has n = 60-200 terms, |alpha| <= 1.5): any fp32 summation order "
        "passes, TF32-rounded inputs fail."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((97, 211), seed=1, params={"alpha": 1.0, "beta": 1.0}),
        Case((130, 257), seed=2, dist="outlier", params={"alpha": 0.5, "beta": -1.0}),
        Case((61, 199), seed=3, dist="corner", params={"alpha": -1.5, "beta": 0.5}),
        Case((203, 77), seed=4, params={"alpha": 1.25, "beta": 0.0}),
        Case((150, 130), seed=5, dist="outlier", params={"alpha": -0.75, "beta": 2.0}),
    ),
    bench=(
        Case((4096, 4096), seed=11, params={"alpha": 1.0, "beta": 1.0}),
        Case((8192, 2048), seed=12, params={"alpha": 0.5, "beta": -1.0}),
    ),
    # A @ B, then C1 @ C1^T, which is symmetric: half of it suffices (SYRK); two axpby epilogues
    flops=lambda c: (
        2.0 * c.shape[0] ** 2 * c.shape[1]
        + c.shape[0] ** 2 * (c.shape[0] + 1)
        + 6.0 * c.shape[0] ** 2
    ),
    bytes_moved=lambda c: 4.0 * (2 * c.shape[0] * c.shape[1] + 2 * c.shape[0] ** 2),
    tolerance=Tolerance(rtol=1e-4, atol=3e-3),
)
