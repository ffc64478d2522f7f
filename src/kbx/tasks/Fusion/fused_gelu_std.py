"""Fusion/fused_gelu_std: standard deviation of GELU(input) over dims, with Bessel correction."""

import torch
import torch.nn.functional as F

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e4, -1e4, 1e-30)  # no +-inf: PyTorch's own float32 GELU(inf) is NaN


def reference(input, dim=None, keepdim=False, correction=1, approximate="none", out=None):
    g = F.gelu(input, approximate=approximate)
    y = torch.std(g, dim=dim, keepdim=keepdim, correction=correction)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(case: Case, device: str) -> Inputs:
    p = dict(case.params)
    scale, shift = p.pop("scale", 1.0), p.pop("shift", 0.0)
    x = Draw(case, device).tensor(case.shape, scale=scale, shift=shift, specials=SPECIALS)
    return Inputs((x,), p)


TASK = Task(
    entry="fused_gelu_std",
    signature=(
        "fused_gelu_std(input, dim=None, keepdim=False, correction=1, approximate='none', out=None)"
    ),
    description=(
        "G = gelu(input, approximate) ('none': exact erf form; 'tanh': the tanh approximation), "
        "then torch.std(G, dim, keepdim, correction): the square root of sum((g - mean)^2) / "
        "max(0, n - correction) over the reduced elements (n of them). `input` is a contiguous "
        "float32 tensor (1-D to 4-D); `dim` is None (all elements, a 0-d result), an int "
        "(possibly negative) or a tuple of ints; keepdim keeps reduced dims with size 1; "
        "correction is 0, 1 or 2. Returns a new float32 tensor; `out` is not passed. Cases: "
        "single first/middle/last/negative dims, non-adjacent tuples, dim=None, keepdim, both "
        "GELU forms, corner values (signed zeros, +-1e4) and inputs shifted to a mean of 60 with "
        "unit spread (GELU is the identity there), which a one-pass E[g^2] - E[g]^2 variance "
        "in float32 gets wrong by ~1e-4."
    ),
    math=r"\sigma = \sqrt{\tfrac{1}{\max(0, n - c)}\sum_j (g_j - \bar g)^2},\ g = x\,\Phi(x)",
    precision=(
        "float32 in and out; GELU in float32; statistics accumulated in float32 or wider with a "
        "stable method (two-pass, Welford or Chan's pairwise merge). rtol=2e-5, atol=1e-6."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 129), seed=1, params={"dim": 1}),
        Case((45, 23, 17), seed=2, dist="outlier", params={"dim": 0, "approximate": "tanh"}),
        Case((7, 33, 5, 19), seed=3, dist="corner", params={"dim": (1, 3), "keepdim": True}),
        Case((3001,), seed=4, params={"correction": 0, "scale": 2.0}),
        Case((13, 61, 11), seed=5, params={"dim": -2, "shift": 60.0, "correction": 2}),
        Case((6, 5, 7, 9), seed=6, dist="corner", params={"approximate": "tanh", "keepdim": True}),
    ),
    bench=(
        Case((16384, 8192), seed=11, params={"dim": 1}),
        Case((8192, 16384), seed=12, params={"dim": 0, "approximate": "tanh"}),
        Case((128, 1024, 1024), seed=13, params={"dim": (0, 2)}),
    ),
    flops=lambda c: 14.0 * numel(c.shape),
    bytes_moved=lambda c: 4.0 * numel(c.shape),
    tolerance=Tolerance(rtol=2e-5, atol=1e-6),
)
