"""Normalization/normalize_pairwise_distance: F.normalize of F.pairwise_distance(x1, x2)."""

import torch.nn.functional as F

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

CALL_ARGS = ("p_distance", "eps_distance", "keepdim", "p_norm", "dim_norm", "eps_norm")


def reference(
    x1, x2, p_distance=2.0, eps_distance=1e-06, keepdim=False, p_norm=2, dim_norm=1, eps_norm=1e-12
):
    distance = F.pairwise_distance(x1, x2, p=p_distance, eps=eps_distance, keepdim=keepdim)
    return F.normalize(distance, p=p_norm, dim=dim_norm, eps=eps_norm)


def make_inputs(case: Case, device: str) -> Inputs:
    d = Draw(case, device)
    x1 = d.tensor(case.shape)
    x2 = d.tensor(case.shape)
    if case.dist == "corner":  # some identical rows: their distance is ||eps||_p, not 0
        rows = x1.reshape(-1, case.shape[-1])
        x2.reshape(-1, case.shape[-1])[::7] = rows[::7]
    kwargs = {k: case.params[k] for k in CALL_ARGS if k in case.params}
    return Inputs((x1.to(device), x2.to(device)), kwargs)


TASK = Task(
    entry="normalize_pairwise_distance",
    signature=(
        "normalize_pairwise_distance(x1, x2, p_distance=2.0, eps_distance=1e-06, keepdim=False, "
        "p_norm=2, dim_norm=1, eps_norm=1e-12)"
    ),
    description=(
        "Two steps on contiguous float32 `x1`, `x2` of the same shape (..., D): first the "
        "p-norm distance along the last dim, dist = ||x1 - x2 + eps_distance||_p with "
        "p = p_distance (F.pairwise_distance: eps is added to every difference), of shape "
        "(...) or (..., 1) with keepdim=True; then F.normalize of dist along dim `dim_norm`: "
        "dist / max(||dist||_{p_norm}, eps_norm) over that dim. Returns a new float32 tensor "
        "shaped like dist. The cases use 2-D to 4-D inputs, p_distance 1, 2, 3 and inf, "
        "p_norm 1, 2 and 3, dim_norm 0, 1 and -1, keepdim=True, rows with x1 == x2, and an "
        "eps_norm larger than the norm (the clamp is active). "
        "(With the defaults the input must be at least 3-D: dim_norm=1 of a 1-D dist does "
        "not exist.)"
    ),
    math=r"\delta_i = \Big(\sum_k |x_{1,ik} - x_{2,ik} + \epsilon_d|^{p_d}\Big)^{1/p_d},\quad"
    r"\mathrm{out} = \delta / \max(\|\delta\|_{p_n,\,\mathrm{dim}}, \epsilon_n)",
    precision=(
        "float32 in and out, sums of powers accumulated in float32; tolerance rtol=1e-5, "
        "atol=1e-9: every quantity is a sum of non-negative terms, so float32 keeps ~1e-6 "
        "relative accuracy even for the tiny distances of identical rows (~1e-8 after "
        "normalization)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((6, 37, 50), seed=1),
        Case((45, 33), seed=2, dist="outlier", params={"p_distance": 1.0, "dim_norm": 0}),
        Case(
            (4, 29, 19),
            seed=3,
            dist="corner",
            params={"keepdim": True, "p_norm": 1, "eps_distance": 1e-3},
        ),
        Case((3, 5, 17, 24), seed=4, params={"p_distance": 3.0, "p_norm": 3, "dim_norm": -1}),
        Case(
            (7, 41, 64),
            seed=5,
            dist="outlier",
            params={"p_distance": float("inf"), "dim_norm": 0, "eps_norm": 100.0},
        ),
    ),
    bench=(
        Case((64, 4096, 256), seed=11),
        Case((1 << 20, 64), seed=12, params={"p_distance": 1.0, "dim_norm": 0}),
    ),
    flops=lambda c: 4.0 * numel(c.shape) + 4.0 * numel(c.shape[:-1]),
    bytes_moved=lambda c: 8.0 * numel(c.shape) + 4.0 * numel(c.shape[:-1]),
    tolerance=Tolerance(rtol=1e-5, atol=1e-9),
)
