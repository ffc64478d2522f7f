"""Fusion/fused_softmax_log: softmax(log(x)) along a dim, i.e. x normalised to sum to one."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, 1e-30, 1e30, 1e4, 1e-4)  # applied before abs: zeros, tiny and huge values


def reference(input, dim=-1, dtype=None):
    return torch.nn.functional.softmax(torch.log(input), dim=dim, dtype=dtype)


def make_inputs(case: Case, device: str) -> Inputs:
    """Positive draws (|x| in the case's distribution); corner cases also plant, along `dim`, a
    negative entry, an all-zero line, a +inf entry and a -0.0 in four different lines."""
    p = dict(case.params)
    dim = p.get("dim", -1)
    d = Draw.sized(case, device)
    x = d.tensor(case.shape, specials=SPECIALS, scale=p.pop("scale", 1.0)).abs()
    if case.dist == "corner":
        lines = x.movedim(dim, -1)  # a view: writes land in x
        lead = lines.shape[:-1]
        for k, put in enumerate(("negative", "zeros", "inf", "negzero")):
            at = tuple(int(i) for i in torch.unravel_index(torch.tensor(3 * k + 1), lead))
            if put == "zeros":
                lines[at] = 0.0
            else:
                value = {"negative": -0.5, "inf": float("inf"), "negzero": -0.0}[put]
                lines[at + (k + 2,)] = value
    if "dtype" in p:
        p["dtype"] = getattr(torch, p["dtype"])
    return Inputs((x.to(device),), p)


TASK = Task(
    entry="fused_softmax_log",
    signature="fused_softmax_log(input, dim=-1, dtype=None)",
    description=(
        "Softmax of the natural logarithm along `dim`: out = softmax(log(x), dim), computed as "
        "torch.nn.functional.softmax(torch.log(input), dim=dim, dtype=dtype). For positive "
        "inputs this is x / sum(x) along the dim; the edge cases follow the two-step torch "
        "semantics: a zero (or -0.0) gives log = -inf and an output of 0, a line holding a "
        "negative entry or NaN is NaN throughout, a line of zeros is NaN throughout (0/0), a "
        "line holding +inf is NaN throughout (inf - inf). `input` is a contiguous float32 "
        "tensor (1-D to 3-D); `dim` any valid dim (negative allowed); `dtype` None or "
        "torch.float64 (the logarithm is taken in float32, then the values are cast to dtype "
        "before the softmax, and the result has that dtype). Returns a new tensor of the "
        "input's shape. Cases cover the last, first and a middle dim, line lengths from 7 to "
        "1500, dtype=torch.float64, and the corner lines above."
    ),
    math=r"y_i = \frac{\exp(\log x_i)}{\sum_j \exp(\log x_j)}",
    precision=(
        "float32 in and out (float64 out with dtype=torch.float64), computed in float32 or "
        "wider with the max-subtracted softmax; rtol=1e-5, atol=1e-7. NaN must appear exactly "
        "where torch puts it."
    ),
    reference=reference,
    make_inputs=make_inputs,
    version=2,  # benchmark inputs derived on the GPU, not on the CPU (2026-11-30)
    cases=(
        Case((37, 129), seed=1),
        Case((3, 1500), seed=2, dist="outlier", params={"scale": 10.0}),
        Case((41, 7, 19), seed=3, dist="corner", params={"dim": 1}),
        Case((23, 45), seed=4, dist="corner", params={"dim": 0}),
        Case((5, 33, 12), seed=5, params={"dim": -1, "dtype": "float64"}),
        Case((301,), seed=6, dist="outlier", params={"dim": 0}),
    ),
    bench=(
        Case((16384, 4096), seed=11),
        Case((4096, 128, 128), seed=12, params={"dim": 1}),
    ),
    flops=lambda c: 5.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-7),
)
