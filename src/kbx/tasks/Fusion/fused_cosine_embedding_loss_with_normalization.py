"""Fusion/fused_cosine_embedding_loss_with_normalization: L2-normalize, cosine embedding loss."""

import torch
import torch.nn.functional as F

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(input1, input2, target, margin=0, reduction="mean"):
    a, b = F.normalize(input1, p=2.0, dim=1), F.normalize(input2, p=2.0, dim=1)
    return F.cosine_embedding_loss(a, b, target, margin=margin, reduction=reduction)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, D); params: near (fraction of rows where input2 = input1 + 0.2 noise), zero
    (fraction of rows of each input set to zero), margin, reduction."""
    p = dict(case.params)
    n, dim = case.shape
    d = Draw(case, device)
    x1, x2 = d.tensor(case.shape), d.tensor(case.shape)
    near = d.uniform((n, 1), 0.0, 1.0, dtype=torch.float64) < p.pop("near", 0.0)
    x2 = torch.where(near, x1 + 0.2 * x2, x2)
    zero = p.pop("zero", 0.0)
    for x in (x1, x2):
        x.mul_((d.uniform((n, 1), 0.0, 1.0, dtype=torch.float64) >= zero).to(x.dtype))
    target = 2 * d.integers((n,), 0, 2) - 1  # +1 or -1
    return Inputs((x1, x2, target), p)


TASK = Task(
    entry="fused_cosine_embedding_loss_with_normalization",
    signature=(
        "fused_cosine_embedding_loss_with_normalization(input1: torch.Tensor, input2: "
        "torch.Tensor, target: torch.Tensor, margin: float=0, reduction: str='mean') -> "
        "torch.Tensor"
    ),
    description=(
        "Cosine embedding loss of L2-normalized rows: a = F.normalize(input1, dim=1), b = "
        "F.normalize(input2, dim=1) (each row divided by max(||row||_2, 1e-12)), then "
        "F.cosine_embedding_loss(a, b, target, margin, reduction). input1 and input2 are "
        "contiguous float32 (N, D); target is int64 (N,) with values +1 or -1. Per row, "
        "cos = <a, b> / sqrt((||a||^2 + 1e-12)(||b||^2 + 1e-12)) (PyTorch's formula, which "
        "makes cos = 0 when either row is all zeros), and loss = 1 - cos for target +1, "
        "max(0, cos - margin) for target -1. reduction 'none' returns the float32 (N,) losses, "
        "'sum' their sum and 'mean' their mean, as 0-d float32. Cases cover the three "
        "reductions, margins 0, 0.3 and -0.2, rows of input2 close to input1 (cos near 1, so "
        "1 - cos must not lose precision to a sloppy norm), and all-zero rows."
    ),
    math=r"\ell_i = \begin{cases} 1 - \cos(a_i, b_i) & y_i = 1\\ \max(0, \cos(a_i, b_i) - m) "
    r"& y_i = -1\end{cases},\quad a_i = \frac{x_i}{\max(\lVert x_i\rVert_2, 10^{-12})}",
    precision="float32 in and out; row sums in float32; rtol=1e-5, atol=1e-6.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((67, 1000), seed=1, params={"near": 0.5}),
        Case((129, 517), seed=2, dist="outlier", params={"reduction": "none", "margin": 0.3}),
        Case(
            (45, 333),
            seed=3,
            dist="corner",
            params={"reduction": "none", "zero": 0.15, "near": 0.3, "margin": -0.2},
        ),
        Case((301, 64), seed=4, params={"reduction": "sum", "near": 0.5, "margin": 0.3}),
        Case((37, 2049), seed=5, dist="outlier", params={"reduction": "none", "near": 0.8}),
        Case((23, 129), seed=6, params={"zero": 0.2, "near": 0.5}),
    ),
    bench=(
        Case((16384, 4096), seed=11, params={"near": 0.5}),
        Case((65536, 1024), seed=12, params={"reduction": "none", "margin": 0.3}),
    ),
    flops=lambda c: 6.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape) + 12.0 * c.shape[0],
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
