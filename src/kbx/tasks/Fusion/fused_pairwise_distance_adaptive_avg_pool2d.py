"""Fusion/fused_pairwise_distance_adaptive_avg_pool2d: p-norm distance of two pooled tensors."""

import math

import torch.nn.functional as F

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(x1, x2, output_size, p=2.0, eps=1e-6, keepdim=False):
    a = F.adaptive_avg_pool2d(x1, output_size)
    b = F.adaptive_avg_pool2d(x2, output_size)
    return F.pairwise_distance(a, b, p=p, eps=eps, keepdim=keepdim)


def make_inputs(case: Case, device: str) -> Inputs:
    """case.shape is x1's and x2's shape ((C, H, W) or (N, C, H, W)); params: out (the
    output_size argument), same (every 3rd channel of x2 equals x1's: pooled differences are
    exactly 0, the distance is eps-driven), and p, eps, keepdim."""
    q = case.params
    d = Draw(case, device)
    x1 = d.tensor(case.shape)
    x2 = d.tensor(case.shape)
    if q.get("same"):
        x2[..., ::3, :, :] = x1[..., ::3, :, :]
    kw = {a: q[a] for a in ("p", "eps", "keepdim") if a in q}
    return Inputs((x1, x2, q["out"]), kw)


def out_w(c: Case) -> int:
    o = c.params["out"]
    w = o if isinstance(o, int) else o[1]
    return c.shape[-1] if w is None else w


def out_h(c: Case) -> int:
    o = c.params["out"]
    h = o if isinstance(o, int) else o[0]
    return c.shape[-2] if h is None else h


TASK = Task(
    entry="fused_pairwise_distance_adaptive_avg_pool2d",
    signature=(
        "fused_pairwise_distance_adaptive_avg_pool2d(x1: torch.Tensor, x2: torch.Tensor, "
        "output_size: int or tuple, p: float=2.0, eps: float=1e-06, keepdim: bool=False) -> "
        "torch.Tensor"
    ),
    description=(
        "A = adaptive_avg_pool2d(x1, output_size), B = adaptive_avg_pool2d(x2, output_size), "
        "then torch.nn.functional.pairwise_distance(A, B, p, eps, keepdim): the p-norm over the "
        "LAST dim (the pooled width) of A - B + eps. x1 and x2 are contiguous float32 tensors "
        "of the same shape, (C, H, W) or (N, C, H, W). output_size is an int or an (oh, ow) "
        "pair whose entries may be None (keep that input size). Adaptive pooling averages, for "
        "output cell (i, j), rows floor(i H / oh) .. ceil((i + 1) H / oh) - 1 and the columns "
        "likewise (windows of unequal size that may overlap). The result has shape "
        "(..., C, oh), or (..., C, oh, 1) with keepdim. Cases: p in {2, 1, 3.5, inf}, eps "
        "1e-6 and 1e-2, output sizes that do and do not divide the input, output larger than "
        "the input, None entries, keepdim, and channels where x2 equals x1 (distance "
        "eps * ow^(1/p)); corner inputs hold +-0 and +-1e4."
    ),
    math=r"y_{\dots i} = \Big(\sum_j |A_{\dots ij} - B_{\dots ij} + \epsilon|^p\Big)^{1/p}",
    precision="float32 in and out, computed in float32; rtol=1e-5, atol=1e-6.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 5, 17, 19), seed=1, params={"out": 5}),
        Case((3, 4, 23, 21), seed=2, dist="outlier", params={"out": (4, 6), "p": 1.0}),
        Case((6, 16, 13), seed=3, params={"out": (7, None), "p": 3.5, "same": True}),
        Case(
            (2, 6, 9, 11),
            seed=4,
            dist="corner",
            params={"out": (12, 15), "p": math.inf, "keepdim": True},
        ),
        Case((1, 9, 31, 29), seed=5, dist="outlier", params={"out": 3, "eps": 1e-2, "same": True}),
    ),
    bench=(
        Case((64, 256, 64, 64), seed=11, params={"out": 7}),
        Case((128, 128, 56, 56), seed=12, params={"out": (8, 8), "p": 1.0}),
    ),
    flops=lambda c: 2.0 * numel(c.shape) + 4.0 * numel(c.shape[:-2]) * out_h(c) * out_w(c),
    bytes_moved=lambda c: 8.0 * numel(c.shape) + 4.0 * numel(c.shape[:-2]) * out_h(c),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
