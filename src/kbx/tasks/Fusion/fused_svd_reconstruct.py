"""Fusion/fused_svd_reconstruct: U_r diag(S_r) Vh_r from the SVD of A (rank-r reconstruction)."""

import torch

from kbx.suite.derived import with_spectrum
from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

TOL = 5e-5  # float32 Jacobi reaches ~2e-6 here; fp16-rounded inputs or outputs are >= 1e-4 off


def reference(A: torch.Tensor, rank=None) -> torch.Tensor:
    U, S, Vh = torch.linalg.svd(A, full_matrices=False)
    r = S.shape[-1] if rank is None else rank
    return U[..., :r] @ torch.diag_embed(S[..., :r]) @ Vh[..., :r, :]


def make_inputs(case: Case, device: str) -> Inputs:
    """A = U diag(s) V^T with random orthonormal U, V: the r leading singular values in [2, 6],
    the rest in [0, 0.5] (so A_r is unique and clearly differs from A); in the corner case a
    third of the trailing values are exactly 0 and A is scaled by 10^[-3, 3] per matrix; in the
    outlier case one leading value is 10x larger."""
    d = Draw.sized(case, device)
    *batch, m, n = case.shape
    p, r = min(m, n), case.params["rank"]
    top = d.uniform((*batch, r), 2.0, 6.0, dtype=torch.float64)
    if case.dist == "outlier":  # one dominant singular value, 10x the others
        top[..., 0] *= 10.0
    rest = d.uniform((*batch, p - r), 0.0, 0.5, dtype=torch.float64)
    if case.dist == "corner":
        rest = torch.where(d.uniform(rest.shape, 0, 1, dtype=torch.float64) < 0.33, 0.0, rest)
    s = torch.cat([top, rest], dim=-1)
    a = with_spectrum(d, s, m, n, dist="normal")
    if case.dist == "corner":
        a = a * 10 ** d.uniform((*batch, 1, 1), -3.0, 3.0, dtype=torch.float64)
    return Inputs((a.float().to(device),), {"rank": r})


def check(inputs: Inputs, out: torch.Tensor) -> str | None:
    """Compare with the float64 rank-r reconstruction of the same float32 input, relative to
    each matrix's largest entry; the spectrum gap after s_r makes it unique."""
    a, r = inputs.args[0].cpu().double(), inputs.kwargs["rank"]
    U, S, Vh = torch.linalg.svd(a, full_matrices=False)
    gap = (S[..., r - 1] - S[..., r]) / S[..., :1].squeeze(-1)
    if float(gap.min()) < 0.01:
        return f"task input without a clear gap after s_{r} (a task bug)"
    want = U[..., :r] @ torch.diag_embed(S[..., :r]) @ Vh[..., :r, :]
    err = (out.cpu().double() - want).abs().amax(dim=(-2, -1)) / want.abs().amax(dim=(-2, -1))
    worst = float(err.max())
    if not worst <= TOL:  # NaN fails
        return f"max |A_r - A_r,64| / max |A_r,64| = {worst:.3g} > {TOL:g} (worst matrix)"
    return None


TASK = Task(
    entry="fused_svd_reconstruct",
    signature="fused_svd_reconstruct(A: torch.Tensor, rank=None) -> torch.Tensor",
    description=(
        "Reconstruct A from its singular value decomposition, keeping the `rank` largest "
        "singular values: with A = U diag(S) Vh (S non-increasing), return "
        "U[..., :r] diag(S[:r]) Vh[..., :r, :], the best rank-r approximation of A (Eckart-"
        "Young). `A` is float32 (m, n) or batched (*, m, n), tall, wide or square; `rank` a "
        "Python int 1 <= r < min(m, n) in every case. Returns float32 of A's shape. "
        "rank=None keeps every singular value, which reproduces A itself (the released task's "
        "only behaviour, an identity map up to rounding); it is accepted but not exercised. "
        "Inputs have a clear gap after the r-th singular value (leading values in [2, 6], "
        "trailing ones in [0, 0.5]), so the result is unique; the corner case adds exact "
        "zero singular values and per-matrix scales 10^[-3, 3], the outlier case one dominant "
        "singular value (10x). Shapes up to 16 on a side, batched and unbatched."
    ),
    math=r"A_r = \sum_{i \le r} \sigma_i u_i v_i^\top",
    precision=(
        "float32 in and out, computed in float32 (no TF32). Checked per matrix against the "
        "float64 rank-r reconstruction of the same float32 input: "
        f"max|A_r - A_r,64| / max|A_r,64| <= {TOL:g}."
    ),
    reference=reference,
    make_inputs=make_inputs,
    version=3,  # benchmark batches of ~100 ms eager calls (docs/design/task-changes.md)
    cases=(
        Case((13, 8), seed=1, params={"rank": 3}),
        Case((2, 9, 9), seed=2, dist="outlier", params={"rank": 5}),
        Case((2, 6, 11), seed=3, params={"rank": 1}),
        Case((16, 5), seed=4, params={"rank": 4}),
        Case((2, 10, 7), seed=5, dist="corner", params={"rank": 2}),
        Case((2, 12, 16), seed=6, dist="corner", params={"rank": 6}),
    ),
    bench=(
        Case((8192, 24, 16), seed=11, params={"rank": 5}),
        Case((64, 64, 40), seed=12, params={"rank": 10}),
    ),
    # one-sided Jacobi (about 8 sweeps of n^2/2 rotations of length-(m + n) column pairs) + product
    flops=lambda c: (
        numel(c.shape[:-2])
        * (
            8 * 3.0 * min(c.shape[-2:]) ** 2 * sum(c.shape[-2:])
            + 2.0 * numel(c.shape[-2:]) * min(c.shape[-2:])
        )
    ),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=TOL, atol=TOL),
    check=check,
)
