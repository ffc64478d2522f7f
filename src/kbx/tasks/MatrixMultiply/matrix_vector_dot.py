"""MatrixMultiply/matrix_vector_dot: dot(alpha * A @ x + beta * y, x) for a square float32 A."""

import torch

from kbx.suite.inputs import Draw
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)


def reference(A, x, y, alpha, beta):
    y = alpha * torch.mv(A, x) + beta * y
    return torch.dot(y, x)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (n,): A (n, n), x (n,), y (n,); params alpha, beta."""
    (n,) = case.shape
    d = Draw(case, device)
    a = d.tensor((n, n), specials=SPECIALS, scale=n**-0.5)  # entries of A @ x are O(1)
    x = d.tensor((n,), specials=SPECIALS)
    y = d.tensor((n,), specials=SPECIALS)
    return Inputs((a, x, y, case.params["alpha"], case.params["beta"]))


TASK = Task(
    entry="matrix_vector_dot",
    signature=(
        "matrix_vector_dot(A: Tensor, x: Tensor, y: Tensor, alpha: float, beta: float) -> Tensor"
    ),
    description=(
        "With float32 `A` (n, n), `x` (n,) and `y` (n,) and Python floats `alpha`, `beta`: "
        "form v = alpha * (A @ x) + beta * y and return the dot product v . x as a 0-d float32 "
        "tensor (v . x needs A square). `y` is only read: the update is out of place and the "
        "final value of `y` is not judged. The work is one pass over A (a GEMV) plus two "
        "length-n reductions."
    ),
    math=r"r = \sum_i x_i\Big(\alpha \sum_j A_{ij} x_j + \beta y_i\Big)",
    precision=(
        "float32 in and out, accumulated in float32 (any order or blocking). Reduced-mantissa "
        "products (TF32, e.g. Triton's default tl.dot) move the result by ~4e-4 relative and "
        "fail; the tolerance is rtol=2e-5, atol=1e-5 (the result is a random-sign sum of "
        "O(1) terms, n = 90-400)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((211,), seed=1, params={"alpha": 1.0, "beta": 1.0}),
        Case((257,), seed=2, dist="outlier", params={"alpha": 1.5, "beta": -0.5}),
        Case((97,), seed=3, dist="corner", params={"alpha": -0.75, "beta": 2.0}),
        Case((390,), seed=4, params={"alpha": 2.0, "beta": 0.0}),
        Case((130,), seed=5, dist="outlier", params={"alpha": 0.5, "beta": 1.25}),
    ),
    bench=(
        Case((8192,), seed=11, params={"alpha": 1.0, "beta": 1.0}),
        Case((16384,), seed=12, params={"alpha": 0.5, "beta": -2.0}),
    ),
    flops=lambda c: 2.0 * c.shape[0] ** 2 + 5.0 * c.shape[0],
    bytes_moved=lambda c: 4.0 * (c.shape[0] ** 2 + 2 * c.shape[0] + 1),
    tolerance=Tolerance(rtol=2e-5, atol=1e-5),
)
