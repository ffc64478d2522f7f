"""Normalization/normalized_cosine_similarity: cosine similarity of two L_p-normalized tensors."""

import torch.nn.functional as F

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

CALL_ARGS = ("dim", "eps_similarity", "p_norm", "eps_norm")


def reference(x1, x2, dim=1, eps_similarity=1e-8, p_norm=2, eps_norm=1e-12):
    x1 = F.normalize(x1, p=p_norm, dim=dim, eps=eps_norm)
    x2 = F.normalize(x2, p=p_norm, dim=dim, eps=eps_norm)
    return F.cosine_similarity(x1, x2, dim=dim, eps=eps_similarity)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape = x1's shape; params: x2 (x2's shape if it broadcasts), zero (zero out one vector
    of x1 along dim), and the call's keyword arguments."""
    p = case.params
    d = Draw(case, device)
    x1 = d.tensor(case.shape)
    x2 = d.tensor(p.get("x2", case.shape))
    if p.get("zero"):  # an all-zero vector: normalizes to 0, its similarity is 0
        x1.movedim(p.get("dim", 1), -1).reshape(-1, x1.shape[p.get("dim", 1)])[3] = 0.0
    kwargs = {k: p[k] for k in CALL_ARGS if k in p}
    return Inputs((x1.to(device), x2.to(device)), kwargs)


TASK = Task(
    entry="normalized_cosine_similarity",
    signature=(
        "normalized_cosine_similarity(x1: Tensor, x2: Tensor, dim: int=1, "
        "eps_similarity: float=1e-8, p_norm: float=2, eps_norm: float=1e-12) -> Tensor"
    ),
    description=(
        "For float32 `x1` and `x2` (same size along `dim`; x2 may broadcast against x1 in the "
        "other dims): normalize each along `dim`, u = x / max(||x||_p, eps_norm) with "
        "p = p_norm (F.normalize), then return F.cosine_similarity(u1, u2, dim, "
        "eps_similarity) = sum(u1 / max(||u1||_2, eps) * u2 / max(||u2||_2, eps)) over `dim`, "
        "a new float32 tensor of the broadcast shape without `dim`. With p_norm=2 the second "
        "normalization is nearly idle; with p_norm 1 or 3 it is not, and eps_similarity can "
        "clamp. The cases use dim 0, 1 (middle of 3-D), -1 and 2, p_norm 1, 2 and 3, a large "
        "eps_similarity, an all-zero vector (result 0) and a broadcast x2 of leading size 1."
    ),
    math=r"u_i = \frac{x_i}{\max(\|x_i\|_p, \epsilon_n)},\quad"
    r"\mathrm{out} = \sum \frac{u_1}{\max(\|u_1\|_2, \epsilon_s)}\,\frac{u_2}{\max(\|u_2\|_2,"
    r" \epsilon_s)}",
    precision=(
        "float32 in and out, norms and the dot accumulated in float32; tolerance rtol=1e-5, "
        "atol=1e-6 (outputs are cosines in [-1, 1], typically ~1/sqrt(length))."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((64, 50), seed=1),
        Case((37, 24, 5), seed=2, dist="outlier", params={"p_norm": 1}),
        Case(
            (33, 45),
            seed=3,
            dist="corner",
            params={"dim": 0, "zero": True, "p_norm": 1, "eps_similarity": 0.25},
        ),
        Case((5, 29, 40), seed=4, params={"x2": (1, 29, 40), "dim": -1}),
        Case((17, 3, 64), seed=5, dist="outlier", params={"dim": 2, "p_norm": 3.0}),
    ),
    bench=(
        Case((8192, 4096), seed=11),
        Case((64, 1024, 1024), seed=12, params={"p_norm": 1}),
    ),
    flops=lambda c: 10.0 * numel(c.shape),
    bytes_moved=lambda c: (
        4.0
        * (
            numel(c.shape)
            + numel(c.params.get("x2", c.shape))
            + numel(c.shape) // c.shape[c.params.get("dim", 1)]
        )
    ),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
