"""Fusion/fused_avg_pool2d_cosine_similarity: channel-wise cosine similarity map, average-pooled."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.shapes import pool_out, window_in
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e3, -1e3, 1e-30)


def reference(x1, x2, kernel_size, stride=None, padding=0, eps=1e-08):
    cos = torch.nn.functional.cosine_similarity(x1, x2, dim=1, eps=eps)
    return torch.nn.functional.avg_pool2d(cos.unsqueeze(1), kernel_size, stride, padding)


def make_inputs(case: Case, device: str) -> Inputs:
    """params: kernel_size and call kwargs; zero / tiny: fractions of pixels whose channel
    vector is all zero / scaled by tiny_scale (default 1e-9: norm below eps); near: x2 is x1
    plus 0.3 x noise."""
    p = dict(case.params)
    n, c, h, w = case.shape
    d = Draw(case, device)
    x1 = d.tensor(case.shape, specials=SPECIALS)
    x2 = d.tensor(case.shape, specials=SPECIALS)
    if p.pop("near", False):
        x2 = x1 + 0.3 * x2
    tiny = (p.pop("tiny", 0.0), p.pop("tiny_scale", 1e-9))
    for frac, factor in ((p.pop("zero", 0.0), 0.0), tiny):
        for x in (x1, x2):  # each tensor gets its own set of such pixels; some overlap
            hit = d.uniform((n, 1, h, w), 0.0, 1.0, dtype=torch.float64) < frac
            x.mul_(torch.where(hit, factor, 1.0).to(x.dtype))
    return Inputs((x1, x2, p.pop("kernel_size")), p)


def pooled_hw(c: Case) -> int:
    """Pixels of a plane that some pooling window covers (a stride past the window skips some)."""
    p = c.params
    k, pad, ceil = p["kernel_size"], p.get("padding", 0), bool(p.get("ceil_mode"))
    s = p.get("stride") or k
    return window_in(c.shape[2], k, s, pad, 1, ceil) * window_in(c.shape[3], k, s, pad, 1, ceil)


TASK = Task(
    entry="fused_avg_pool2d_cosine_similarity",
    signature=(
        "fused_avg_pool2d_cosine_similarity(x1: torch.Tensor, x2: torch.Tensor, kernel_size: "
        "int, stride: int=None, padding: int=0, eps: float=1e-08) -> torch.Tensor"
    ),
    description=(
        "Cosine similarity of x1 and x2 (contiguous float32, both (N, C, H, W)) along the "
        "channel dim, then 2-D average pooling of the (N, 1, H, W) similarity map. The "
        "similarity follows torch.nn.functional.cosine_similarity exactly: each pixel's channel "
        "vector is divided by max(||v||_2, eps) separately, so cos = <a, b> / (max(||a||, eps) "
        "max(||b||, eps)); two all-zero vectors give 0, and a vector with norm below eps gives a "
        "value shrunk by ||v|| / eps. Pooling is avg_pool2d with square `kernel_size`, `stride` "
        "(None means kernel_size), zero `padding` (at most kernel_size // 2, padded cells count "
        "as 0 and are included in the divisor k*k), floor output size "
        "(H + 2 padding - k) // stride + 1. Returns (N, 1, OH, OW) float32. Cases cover default "
        "and explicit strides (1, 2, 3), padding, eps=1e-3, nearly parallel vectors, and pixels "
        "whose vectors are all zero or have norm below eps."
    ),
    math=r"s_{n,h,w} = \frac{\sum_c a_c b_c}{\max(\lVert a\rVert_2,\epsilon)\,"
    r"\max(\lVert b\rVert_2,\epsilon)},\quad y = \mathrm{avgpool}_{k,s,p}(s)",
    precision=(
        "float32 in and out; channel sums in float32; rtol=1e-5, atol=2e-6 (the similarity lies "
        "in [-1, 1])."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 16, 17, 19), seed=1, params={"kernel_size": 3}),
        Case((3, 8, 23, 21), seed=2, dist="outlier", params={"kernel_size": 2, "stride": 1}),
        Case(
            (2, 12, 15, 13),
            seed=3,
            dist="corner",
            params={"kernel_size": 3, "stride": 2, "padding": 1, "zero": 0.15, "tiny": 0.15},
        ),
        Case(
            (1, 33, 31, 29),
            seed=4,
            params={
                "kernel_size": 5,
                "stride": 2,
                "padding": 2,
                "eps": 1e-3,
                "tiny": 0.2,
                "tiny_scale": 1e-4,
                "zero": 0.1,
            },
        ),
        Case((4, 3, 16, 20), seed=5, params={"kernel_size": 4, "near": True}),
        Case(
            (2, 5, 9, 14),
            seed=6,
            dist="outlier",
            params={"kernel_size": 3, "stride": 1, "padding": 1, "near": True},
        ),
    ),
    bench=(
        Case((32, 64, 256, 256), seed=11, params={"kernel_size": 2}),
        Case((16, 128, 128, 128), seed=12, params={"kernel_size": 3, "stride": 1, "padding": 1}),
    ),
    flops=lambda c: (
        6.0 * numel(c.shape) + numel(pool_out(c)) * c.shape[0] * c.params["kernel_size"] ** 2
    ),
    bytes_moved=lambda c: (
        8.0 * c.shape[0] * c.shape[1] * pooled_hw(c) + 4.0 * c.shape[0] * numel(pool_out(c))
    ),
    tolerance=Tolerance(rtol=1e-5, atol=2e-6),
)
