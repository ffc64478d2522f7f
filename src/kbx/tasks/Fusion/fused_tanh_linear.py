"""Fusion/fused_tanh_linear: tanh(input @ weight^T + bias)."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, tiny values and +-30 (one of these in a row drives its outputs into saturation;
# huge values would let the fp32 summation order decide the unsaturated ones).
SPECIALS = (0.0, -0.0, 1e-30, -1e-30, 30.0, -30.0)


def reference(input, weight, bias=None):
    return torch.tanh(torch.nn.functional.linear(input, weight, bias))


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (*lead, in_features, out_features); params: bias (default True)."""
    *lead, k, n = case.shape
    d = Draw(case, device)
    x = d.tensor((*lead, k), specials=SPECIALS)
    w = d.tensor((n, k), dist="normal", scale=k**-0.5)  # keeps |z| = O(1): tanh not saturated
    b = d.tensor((n,), dist="normal", scale=0.5) if case.params.get("bias", True) else None
    return Inputs((x, w, b))


TASK = Task(
    entry="fused_tanh_linear",
    signature=(
        "fused_tanh_linear(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor=None) "
        "-> torch.Tensor"
    ),
    description=(
        "A linear layer followed by tanh: out = tanh(input @ weight^T + bias). `input` is a "
        "contiguous float32 tensor (*, in_features) (2-D to 4-D), `weight` float32 "
        "(out_features, in_features), `bias` float32 (out_features,) or None. Returns a new "
        "float32 tensor (*, out_features). Weights are scaled by 1/sqrt(in_features) so that "
        "most pre-activations are O(1) and tanh is far from saturation; corner cases add +-30 "
        "entries (saturated outputs), signed zeros and tiny values. Cases cover bias and no "
        "bias, 2-D, 3-D and 4-D inputs and contraction lengths 129 to 231."
    ),
    math=r"y = \tanh(x W^\top + b)",
    precision=(
        "float32 in and out; the matmul accumulates in float32 and TF32 (or any reduced-mantissa "
        "input rounding, e.g. Triton's default tl.dot) is not allowed: use "
        "tl.dot(..., input_precision='ieee'). rtol=1e-4, atol=1e-5."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 129, 45), seed=1),
        Case((2, 31, 200, 33), seed=2, dist="outlier", params={"bias": False}),
        Case((4, 29, 150, 50), seed=3, dist="corner"),
        Case((61, 231, 64), seed=4),
        Case((3, 5, 7, 180, 31), seed=5, dist="corner", params={"bias": False}),
    ),
    bench=(
        Case((8192, 4096, 4096), seed=11),
        Case((16, 512, 2048, 6144), seed=12, params={"bias": False}),
    ),
    flops=lambda c: 2.0 * numel(c.shape[:-2]) * c.shape[-2] * c.shape[-1],
    bytes_moved=lambda c: (
        4.0 * (numel(c.shape[:-1]) + c.shape[-2] * c.shape[-1] + numel(c.shape[:-2]) * c.shape[-1])
    ),
    tolerance=Tolerance(rtol=1e-4, atol=1e-5),
)
