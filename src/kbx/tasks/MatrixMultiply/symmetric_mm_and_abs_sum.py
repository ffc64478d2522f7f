"""MatrixMultiply/symmetric_mm_and_abs_sum: sum |alpha * A @ A^T + beta * C| (float32 scalar)."""

import torch

from kbx.suite.inputs import Draw
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)


def reference(A, C, alpha, beta):
    C = alpha * torch.mm(A, A.T) + beta * C
    return torch.sum(torch.abs(C))


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (n, m): A (n, m), C (n, n); params alpha, beta, and `cancel` = relative size of
    alpha * A @ A^T + beta * C when C is drawn to nearly cancel the product (else C is random)."""
    n, m = case.shape
    p = case.params
    d = Draw(case, device)
    a = d.tensor((n, m), specials=SPECIALS, scale=m**-0.5)  # entries of A @ A^T are O(1)
    c = d.tensor((n, n), specials=SPECIALS)
    if "cancel" in p:  # C = -(alpha/beta) A A^T (exact, float64) + a small random remainder
        a64 = a.cpu().double()  # on the CPU: the same C for a CPU and a GPU run
        c = (-(p["alpha"] / p["beta"]) * (a64 @ a64.T) + p["cancel"] * c.cpu().double()).float()
    return Inputs((a.to(device), c.to(device), p["alpha"], p["beta"]))


TASK = Task(
    entry="symmetric_mm_and_abs_sum",
    signature=(
        "symmetric_mm_and_abs_sum(A: torch.Tensor, C: torch.Tensor, alpha: float, beta: float) "
        "-> torch.Tensor"
    ),
    description=(
        "With float32 `A` (n, m) and `C` (n, n) and Python floats `alpha`, `beta`: form "
        "D = alpha * (A @ A^T) + beta * C (A @ A^T is symmetric, C is not) and return the sum "
        "of |D| over all n*n entries as a 0-d float32 tensor. C is not modified. Two of the "
        "cases draw C so that beta * C nearly cancels alpha * A @ A^T (D is 3e-3 or 1e-2 of "
        "either term): there the sum measures how exactly A @ A^T was computed."
    ),
    math=r"r = \sum_{i,j} \big|\alpha (AA^\top)_{ij} + \beta C_{ij}\big|",
    precision=(
        "float32 in and out, products and sums accumulated in float32. TF32 (or any "
        "reduced-mantissa rounding of A, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee') or an exact fp32 emulation such as 'tf32x3'. "
        "Tolerance rtol=2e-5, atol=0 on the positive sum: fp32 in any summation order stays "
        "below ~1e-5 relative (even 65k block partials added one by one); TF32 errors average "
        "out on random C but bias the cancelling cases by 2e-4 to 2e-3 relative and fail."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((97, 211), seed=1, params={"alpha": 1.0, "beta": 1.0}),
        Case((130, 257), seed=2, dist="outlier", params={"alpha": 1.5, "beta": -0.5}),
        Case((61, 199), seed=3, dist="corner", params={"alpha": -0.75, "beta": 2.0}),
        Case((83, 230), seed=4, params={"alpha": 1.0, "beta": 0.5, "cancel": 3e-3}),
        Case(
            (150, 129), seed=5, dist="outlier", params={"alpha": -2.0, "beta": 1.0, "cancel": 1e-2}
        ),
    ),
    bench=(
        Case((8192, 2048), seed=11, params={"alpha": 1.0, "beta": 1.0}),
        Case((4096, 4096), seed=12, params={"alpha": 0.5, "beta": 2.0}),
    ),
    # A @ A^T is symmetric: n(n+1)/2 dot products of length m suffice
    flops=lambda c: c.shape[0] * (c.shape[0] + 1) * c.shape[1] + 5.0 * c.shape[0] ** 2,
    bytes_moved=lambda c: 4.0 * (c.shape[0] * c.shape[1] + c.shape[0] ** 2 + 1),
    tolerance=Tolerance(rtol=2e-5, atol=0.0),
)
