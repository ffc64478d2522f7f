"""Fusion/fused_softplus_linear: softplus(input @ weight^T + bias, beta, threshold)."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, tiny values and +-30: a +-30 entry drives its row's pre-activations to the
# linear branch or deep into the exponential tail.
SPECIALS = (0.0, -0.0, 1e-30, -1e-30, 30.0, -30.0)


def reference(input, weight, bias=None, beta=1, threshold=20):
    z = torch.nn.functional.linear(input, weight, bias)
    return torch.nn.functional.softplus(z, beta=beta, threshold=threshold)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (*lead, in_features, out_features); params: bias (default True), beta, threshold,
    zscale (the pre-activations' typical size)."""
    p = dict(case.params)
    *lead, k, n = case.shape
    d = Draw(case, device)
    x = d.tensor((*lead, k), specials=SPECIALS)
    w = d.tensor((n, k), dist="normal", scale=p.pop("zscale", 2.0) * k**-0.5)
    b = d.tensor((n,), dist="normal") if p.pop("bias", True) else None
    return Inputs((x, w, b), p)


TASK = Task(
    entry="fused_softplus_linear",
    signature="fused_softplus_linear(input, weight, bias=None, beta=1, threshold=20)",
    description=(
        "A linear layer followed by Softplus: z = input @ weight^T + bias, then "
        "out = z where beta * z > threshold, else log(1 + exp(beta * z)) / beta "
        "(torch.nn.functional.softplus). `input` is a contiguous float32 tensor "
        "(*, in_features) (2-D to 4-D), `weight` float32 (out_features, in_features), `bias` "
        "float32 (out_features,) or None, `beta` and `threshold` Python numbers. Returns a new "
        "float32 tensor (*, out_features). Pre-activations are mostly within +-6 (both the "
        "exponential tail and the near-linear part matter); corner cases add +-30 entries. "
        "Cases cover bias and no bias, beta in {1, 2, 0.5}, threshold in {20, 3, 10} (so the "
        "linear branch is taken), and 2-D to 4-D inputs."
    ),
    math=r"z = x W^\top + b,\quad y = \begin{cases} z & \beta z > t \\ "
    r"\tfrac{1}{\beta}\log(1 + e^{\beta z}) & \text{otherwise} \end{cases}",
    precision=(
        "float32 in and out; the matmul accumulates in float32 and TF32 (or any reduced-mantissa "
        "input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee'). log(1 + e^u) must keep relative accuracy for "
        "negative u (log1p). rtol=1e-4, atol=1e-5."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 129, 45), seed=1),
        Case((2, 31, 200, 33), seed=2, dist="outlier", params={"bias": False, "beta": 2}),
        Case((4, 29, 150, 50), seed=3, dist="corner", params={"beta": 2, "threshold": 3}),
        Case((61, 231, 64), seed=4, params={"beta": 0.5, "threshold": 10, "zscale": 4.0}),
        Case((3, 5, 7, 180, 31), seed=5, dist="corner", params={"bias": False}),
    ),
    bench=(
        Case((8192, 4096, 4096), seed=11),
        Case((16, 512, 2048, 6144), seed=12, params={"beta": 2, "threshold": 10}),
    ),
    flops=lambda c: 2.0 * numel(c.shape[:-2]) * c.shape[-2] * c.shape[-1],
    bytes_moved=lambda c: (
        4.0 * (numel(c.shape[:-1]) + c.shape[-2] * c.shape[-1] + numel(c.shape[:-2]) * c.shape[-1])
    ),
    tolerance=Tolerance(rtol=1e-4, atol=1e-5),
)
