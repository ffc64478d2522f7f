"""Fusion/fused_pairwise_distance_normalize: p-norm distance of two F.normalize'd tensors."""

import torch.nn.functional as F

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

CALL_ARGS = ("p_norm", "eps_norm", "eps_distance", "keepdim")


def reference(x1, x2, p_norm=2.0, eps_norm=1e-12, eps_distance=1e-6, keepdim=False):
    n1 = F.normalize(x1, p=p_norm, dim=1, eps=eps_norm)
    n2 = F.normalize(x2, p=p_norm, dim=1, eps=eps_norm)
    return F.pairwise_distance(n1, n2, p=p_norm, eps=eps_distance, keepdim=keepdim)


def make_inputs(case: Case, device: str) -> Inputs:
    """Two draws of the case's shape; corner cases also plant, in 2-D, a zero row, a row below
    eps_norm in norm (the clamp is active) and every 7th row of x2 equal to x1's."""
    d = Draw.sized(case, device)
    x1 = d.tensor(case.shape, specials=(0.0, -0.0, 1e3, -1e3, 1e-30))
    x2 = d.tensor(case.shape, specials=(0.0, -0.0, 1e3, -1e3, 1e-30))
    if case.dist == "corner" and len(case.shape) == 2:
        x1[0] = 0.0
        x2[1] = x2[1] * 1e-14
        x2[::7] = x1[::7]
    kwargs = {k: case.params[k] for k in CALL_ARGS if k in case.params}
    return Inputs((x1.to(device), x2.to(device)), kwargs)


TASK = Task(
    entry="fused_pairwise_distance_normalize",
    signature=(
        "fused_pairwise_distance_normalize(x1: torch.Tensor, x2: torch.Tensor, "
        "p_norm: float=2.0, eps_norm: float=1e-12, eps_distance: float=1e-06, "
        "keepdim: bool=False) -> torch.Tensor"
    ),
    description=(
        "Normalize two tensors, then take their row-wise p-norm distance. `x1`, `x2` are "
        "contiguous float32 tensors of the same shape, 2-D (N, D) or 3-D (A, M, D). Step 1, "
        "as F.normalize(x, p=p_norm, dim=1, eps=eps_norm): divide each by max(||.||_p, eps_norm) "
        "where the p-norm runs along dim 1 (the rows' D entries for 2-D inputs, the M entries "
        "of each (a, :, d) column for 3-D inputs). Step 2, as F.pairwise_distance(n1, n2, "
        "p=p_norm, eps=eps_distance, keepdim): ||n1 - n2 + eps_distance||_p along the LAST dim "
        "(eps is added to every difference). Returns float32 of shape x.shape[:-1] (with a "
        "trailing 1 when keepdim=True). p_norm is exercised with 1, 2, 3 and inf; cases cover "
        "2-D and 3-D inputs, keepdim, outliers, +-1e3 entries, an all-zero row, a row whose "
        "norm is below eps_norm and rows with x1 == x2 (distance = eps_distance * D^(1/p))."
    ),
    math=r"\hat x = \frac{x}{\max(\|x\|_{p,\,\mathrm{dim}=1}, \epsilon_n)},\quad "
    r"d = \Big(\sum_k |\hat x_{1,k} - \hat x_{2,k} + \epsilon_d|^p\Big)^{1/p}",
    precision=(
        "float32 in and out, sums of powers accumulated in float32; rtol=1e-5, atol=1e-6 "
        "(normalized entries are at most 1, so the distances are O(1) or equal to the tiny "
        "eps term, which any consistent computation reproduces)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    version=2,  # benchmark inputs derived on the GPU, not on the CPU (2026-11-30)
    cases=(
        Case((37, 64), seed=1),
        Case((29, 45), seed=2, dist="outlier", params={"p_norm": 1.0, "keepdim": True}),
        Case((6, 17, 33), seed=3, dist="corner"),
        Case((41, 50), seed=4, params={"p_norm": 3.0, "eps_distance": 1e-3}),
        Case((5, 23, 19), seed=5, dist="outlier", params={"p_norm": float("inf")}),
        Case((31, 40), seed=6, dist="corner", params={"p_norm": 2.0, "eps_norm": 1e-6}),
    ),
    bench=(
        Case((1 << 20, 64), seed=11),
        Case((64, 512, 1024), seed=12, params={"p_norm": 1.0, "keepdim": True}),
    ),
    flops=lambda c: 8.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape) + 4.0 * numel(c.shape[:-1]),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
