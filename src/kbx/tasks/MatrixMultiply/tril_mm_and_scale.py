"""MatrixMultiply/tril_mm_and_scale: beta * (alpha * (tril(A) @ B)), float32."""

import torch

from kbx.suite.inputs import Draw
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)
# Above the diagonal tril() discards A: even NaN and Inf there must not reach the output.
UPPER_SPECIALS = (float("nan"), float("inf"), float("-inf"), 1e30)


def reference(A: torch.Tensor, B: torch.Tensor, alpha: float, beta: float) -> torch.Tensor:
    B = alpha * torch.mm(torch.tril(A), B)
    return beta * B


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (n, p): A (n, n), B (n, p); params alpha, beta."""
    n, p = case.shape
    d = Draw(case, device)
    a = d.tensor((n, n), specials=SPECIALS)
    b = d.tensor((n, p), specials=SPECIALS)
    if case.dist == "corner":  # a fresh strictly upper triangle, 5% of it NaN/Inf/1e30
        junk = d.tensor((n, n), specials=UPPER_SPECIALS)
        a = torch.where(torch.ones(n, n, dtype=torch.bool, device=a.device).triu(1), junk, a)
    return Inputs((a.to(device), b.to(device), case.params["alpha"], case.params["beta"]))


TASK = Task(
    entry="tril_mm_and_scale",
    signature=(
        "tril_mm_and_scale(A: torch.Tensor, B: torch.Tensor, alpha: float, beta: float) "
        "-> torch.Tensor"
    ),
    description=(
        "Product of the lower triangle of a square float32 `A` (n, n), diagonal included, with "
        "float32 `B` (n, p), scaled by alpha and then by beta: out = beta * (alpha * "
        "(tril(A) @ B)), a new float32 (n, p) tensor. Entries of A above the diagonal are "
        "ignored; in the corner case they hold NaN, +-Inf and 1e30, which must not reach the "
        "output (masking by multiplication with 0 would). Row i of the result contracts i + 1 "
        "terms, so about half of a full matmul's work is needed. `alpha`, `beta` are floats."
    ),
    math=r"\mathrm{out}_{ij} = \beta\Big(\alpha \sum_{k \le i} A_{ik} B_{kj}\Big)",
    precision=(
        "float32 in and out, products accumulated in float32; alpha and beta may be applied in "
        "either order or as one factor. TF32 (or any reduced-mantissa input rounding, e.g. "
        "Triton's default tl.dot) is not allowed: use tl.dot(..., input_precision='ieee') or "
        "an exact fp32 emulation such as 'tf32x3'. Tolerance rtol=1e-4, atol=2e-3 (n up to "
        "260, N(0,1) entries, |alpha * beta| <= 1.5) admits any fp32 summation order and "
        "rejects TF32-rounded inputs."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((211, 83), seed=1, params={"alpha": 1.0, "beta": 1.0}),
        Case((257, 61), seed=2, dist="outlier", params={"alpha": 1.5, "beta": -0.5}),
        Case((199, 77), seed=3, dist="corner", params={"alpha": -0.75, "beta": 2.0}),
        Case((130, 150), seed=4, params={"alpha": 2.0, "beta": 0.75}),
        Case((160, 33), seed=5, dist="corner", params={"alpha": 0.5, "beta": -1.25}),
    ),
    bench=(
        Case((8192, 8192), seed=11, params={"alpha": 1.0, "beta": 1.0}),
        Case((4096, 16384), seed=12, params={"alpha": 0.5, "beta": 2.0}),
    ),
    # only the lower triangle: n(n+1)/2 products per column of B
    flops=lambda c: c.shape[0] * (c.shape[0] + 1) * c.shape[1] + 2.0 * c.shape[0] * c.shape[1],
    bytes_moved=lambda c: 4.0 * (c.shape[0] * (c.shape[0] + 1) / 2 + 2 * c.shape[0] * c.shape[1]),
    tolerance=Tolerance(rtol=1e-4, atol=2e-3),
)
