"""Fusion/fused_log_softmax_linear: log_softmax(linear(input, weight, bias), dim, dtype)."""

import math

import torch
import torch.nn.functional as F

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)  # huge values would let fp32 summation order decide


def reference(input, weight, bias=None, dim=-1, dtype=None):
    return F.log_softmax(F.linear(input, weight, bias), dim=dim, dtype=dtype)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (*batch, K); params: n (out_features), bias, shift (added to the bias: large
    logits), dim, dtype. Weights are scaled so that logits spread ~N(0, 4)."""
    q = case.params
    k, n = case.shape[-1], q["n"]
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS)
    w = d.tensor((n, k), dist="normal", scale=2 / math.sqrt(k))
    b = d.tensor((n,), dist="normal", shift=q.get("shift", 0.0)) if q.get("bias") else None
    return Inputs((x, w, b), {a: q[a] for a in ("dim", "dtype") if a in q})


TASK = Task(
    entry="fused_log_softmax_linear",
    signature="fused_log_softmax_linear(input, weight, bias=None, dim=-1, dtype=None)",
    description=(
        "Z = input @ weight^T + bias (torch.nn.functional.linear) with `input` a contiguous "
        "float32 (*, K) tensor (2-D or 3-D), `weight` float32 (N, K), `bias` (N,) or None; then "
        "log_softmax(Z, dim, dtype): z - max - log(sum(exp(z - max))) along `dim`, which may "
        "be the feature dim (-1) or another one (0 for 2-D input: across rows; 1 for 3-D). "
        "dtype=None gives a float32 result; dtype=torch.float64 casts Z to float64 before the "
        "log-softmax and gives a float64 result. Cases: bias and none, dims -1, 0 and 1, "
        "float64 output, and logits shifted by 100 (exp overflows in float32 without the max "
        "subtraction)."
    ),
    math=r"y = z - \log\sum_j e^{z_j},\quad z = x W^T + b",
    precision=(
        "float32 in; the matmul accumulates in float32 and TF32 (or any reduced-mantissa "
        "input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee'); the log-softmax in float32 (float64 with "
        "dtype=torch.float64). rtol=1e-5, atol=3e-5 (float32 errors ~5e-6 with logits near 100, "
        "TF32 errors ~1e-3)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 129), seed=1, params={"n": 45, "bias": True}),
        Case((61, 96), seed=2, dist="outlier", params={"n": 33, "dim": 0}),
        Case((3, 29, 200), seed=3, dist="corner", params={"n": 50, "bias": True, "dim": 1}),
        Case((45, 77), seed=4, params={"n": 100, "bias": True, "dtype": torch.float64}),
        Case((2, 21, 64), seed=5, params={"n": 70, "bias": True, "shift": 100.0}),
        Case((33, 150), seed=6, dist="outlier", params={"n": 20, "dim": 0, "dtype": torch.float64}),
    ),
    bench=(
        Case((8192, 2048), seed=11, params={"n": 4096, "bias": True}),
        Case((16, 1024, 1024), seed=12, params={"n": 4096, "dim": 1}),
    ),
    flops=lambda c: 2.0 * numel(c.shape) * c.params["n"],
    bytes_moved=lambda c: (
        4.0 * (numel(c.shape) + c.params["n"] * (c.shape[-1] + bool(c.params.get("bias"))))
        + (8.0 if c.params.get("dtype") is torch.float64 else 4.0)
        * numel(c.shape[:-1])
        * c.params["n"]
    ),
    tolerance=Tolerance(rtol=1e-5, atol=3e-5),
)
