"""Fusion/fused_qr_solve: least-squares solve of A x = b through the QR factorization of A."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = 5e-5  # float32 Householder solves reach ~2e-6 here; fp16-rounded inputs are >= 2e-4 off


def reference(A: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    Q, R = torch.linalg.qr(A, mode="reduced")
    return torch.linalg.solve(R, Q.mT @ b)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (*batch, m, n, k); A = U diag(s) V^T with random orthonormal U (m x n), V and
    singular values s in [1, 5] (cond(A) <= 5), times 10^[-3, 3] per matrix in the corner case;
    b is (*batch, m, k) in the case's distribution, or (m,) with params vector=True."""
    *batch, m, n, k = case.shape
    d = Draw.sized(case, device)
    u = torch.linalg.qr(d.tensor((*batch, m, n), dtype=torch.float64, dist="normal"))[0]
    v = torch.linalg.qr(d.tensor((*batch, n, n), dtype=torch.float64, dist="normal"))[0]
    s = d.uniform((*batch, n), 1.0, 5.0, dtype=torch.float64)
    a = u @ torch.diag_embed(s) @ v.mT
    if case.dist == "corner":
        a = a * 10 ** d.uniform((*batch, 1, 1), -3.0, 3.0, dtype=torch.float64)
    shape = (m,) if case.params.get("vector") else (*batch, m, k)
    b = d.tensor(shape, specials=(0.0, -0.0, 1e3, -1e3))
    return Inputs((a.float().to(device), b.to(device)))


def check(inputs: Inputs, out: torch.Tensor) -> str | None:
    """The least-squares solution of a full-rank A is unique: compare it with float64's,
    relative to each system's largest |x|."""
    a, b = (t.cpu().double() for t in inputs.args)
    vec = b.dim() == 1
    want = torch.linalg.lstsq(a, b[:, None] if vec else b).solution
    got = out.cpu().double()
    if vec:
        got = got[:, None]
    err = (got - want).abs().amax(dim=(-2, -1)) / want.abs().amax(dim=(-2, -1)).clamp_min(1e-300)
    worst = float(err.max()) if err.numel() else 0.0
    if not worst <= TOL:  # NaN fails
        return f"max |x - x_true| / max |x_true| = {worst:.3g} > {TOL:g} (worst system)"
    return None


def flops(c: Case) -> float:
    *batch, m, n, k = c.shape
    return numel(batch) * (2.0 * m * n * n - 2.0 * n**3 / 3 + 4.0 * m * n * k + n * n * k)


TASK = Task(
    entry="fused_qr_solve",
    signature="fused_qr_solve(A: torch.Tensor, b: torch.Tensor) -> torch.Tensor",
    description=(
        "Solve A x = b in the least-squares sense through a QR factorization: A = Q R (reduced, "
        "Q (m, n) with orthonormal columns, R (n, n) upper triangular), then x = R^{-1} (Q^T b), "
        "like torch.linalg.solve(R, Q.mT @ b) after torch.linalg.qr(A). `A` is float32 "
        "(m, n) or batched (*, m, n) with m >= n and full column rank; `b` is float32 (*, m, k) "
        "with the same batch dims, or a vector (m,) for an unbatched A (then x is (n,)). "
        "Returns x, float32 (*, n, k). For m > n this is the minimiser of ||A x - b||_2, and "
        "for m = n the solution of the square system; either way x is unique, so any correct "
        "method is accepted and judged against float64. Inputs: A with singular values in "
        "[1, 5] (times a per-matrix 10^[-3, 3] in the corner case), b with outliers, signed "
        "zeros and +-1e3 entries; square, tall and single-column A, k from 1 to 7, batched "
        "and unbatched. (The released task transposed Q with Q.T, which only works unbatched; "
        "batches follow Q.mT.)"
    ),
    math=r"A = QR,\quad x = R^{-1} Q^\top b = \arg\min_x \|Ax - b\|_2",
    precision=(
        "float32 in and out, computed in float32 (no TF32) with an orthogonal factorization or "
        "anything as accurate; checked per system against the float64 least-squares solution: "
        f"max|x - x64| / max|x64| <= {TOL:g}."
    ),
    reference=reference,
    make_inputs=make_inputs,
    version=3,  # benchmark batches of ~100 ms eager calls (docs/design/task-changes.md)
    cases=(
        Case((37, 23, 5), seed=1),
        Case((3, 64, 41, 3), seed=2, dist="outlier"),
        Case((50, 1, 2), seed=3),
        Case((29, 29, 4), seed=4, dist="outlier"),
        Case((2, 97, 13, 7), seed=5, dist="corner"),
        Case((31, 17, 1), seed=6, dist="corner", params={"vector": True}),
    ),
    bench=(
        Case((512, 128, 96, 16), seed=11),
        Case((1024, 64, 48, 8), seed=12),
    ),
    flops=flops,
    bytes_moved=lambda c: (
        4.0
        * numel(c.shape[:-3])
        * (c.shape[-3] * c.shape[-2] + c.shape[-3] * c.shape[-1] + c.shape[-2] * c.shape[-1])
    ),
    tolerance=Tolerance(rtol=TOL, atol=TOL),
    check=check,
)
