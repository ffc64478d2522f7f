"""Fusion/fused_elu_linear: ELU(input @ weight^T + bias) with a configurable alpha."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e-30, -1e-30)  # huge values would let fp32 summation order decide


def reference(input, weight, bias=None, alpha=1.0, inplace=False):
    z = torch.nn.functional.linear(input, weight, bias)
    return torch.nn.functional.elu(z, alpha=alpha, inplace=inplace)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (*lead, in_features, out_features); params: bias, alpha, inplace."""
    p = dict(case.params)
    *lead, k, n = case.shape
    d = Draw(case, device)
    x = d.tensor((*lead, k), specials=SPECIALS)
    w = d.tensor((n, k), dist="normal", scale=k**-0.5 * p.pop("wscale", 1.0))
    b = d.tensor((n,), dist="normal") if p.pop("bias", True) else None
    return Inputs((x, w, b), p)


def flops(c: Case) -> float:
    *lead, k, n = c.shape
    return 2.0 * numel(lead) * k * n


TASK = Task(
    entry="fused_elu_linear",
    signature="fused_elu_linear(input, weight, bias=None, alpha=1.0, inplace=False)",
    description=(
        "A linear layer followed by ELU: z = input @ weight^T + bias, out = z where z > 0 and "
        "alpha * (exp(z) - 1) elsewhere. `input` is a contiguous float32 (*, in_features) "
        "tensor (2-D to 4-D), `weight` float32 (out_features, in_features), `bias` float32 "
        "(out_features,) or None; `alpha` a float. Returns a new float32 tensor "
        "(*, out_features). `inplace` only allows overwriting the intermediate z and has no "
        "visible effect. Weights are scaled by 1/sqrt(in_features), so about half of z is "
        "negative and both branches matter. Cases cover bias and no bias, alpha in "
        "{1, 0.5, 1.7, 2}, inplace=True, and 2-D, 3-D and 4-D inputs."
    ),
    math=r"z = x W^\top + b,\quad y = \begin{cases} z & z > 0 \\ \alpha (e^{z} - 1) & z \le 0"
    r"\end{cases}",
    precision=(
        "float32 in and out; the matmul accumulates in float32 and TF32 (or any reduced-mantissa "
        "input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee'). rtol=1e-4, atol=1e-5 (|z| is O(1) here; "
        "contraction lengths 129-231)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 129, 45), seed=1),
        Case((2, 31, 200, 33), seed=2, dist="outlier", params={"bias": False, "alpha": 0.5}),
        Case((4, 29, 150, 50), seed=3, dist="corner", params={"alpha": 1.7}),
        Case((61, 231, 64), seed=4, params={"alpha": 2.0, "inplace": True}),
        Case((3, 5, 7, 180, 31), seed=5, dist="outlier"),
    ),
    bench=(
        Case((8192, 4096, 4096), seed=11),
        Case((16, 1024, 2048, 8192), seed=12, params={"alpha": 0.5}),
    ),
    flops=flops,
    bytes_moved=lambda c: (
        4.0 * (numel(c.shape[:-1]) + c.shape[-2] * c.shape[-1] + numel(c.shape[:-2]) * c.shape[-1])
    ),
    tolerance=Tolerance(rtol=1e-4, atol=1e-5),
)
