"""Activation/gelu_bf16: element-wise GELU (erf form or tanh approximation) on bfloat16."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, large values of both signs and NaN. No infinities: gelu(-inf) is 0 * inf, and
# PyTorch's own CPU and CUDA kernels disagree on gelu(+inf).
SPECIALS = (0.0, -0.0, 1e30, -1e30, 1e-3, float("nan"))


def reference(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    # PyTorch evaluates in float32 and rounds once to bfloat16.
    return torch.nn.functional.gelu(input, approximate=approximate)


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(case.shape, specials=SPECIALS)
    return Inputs((x,), dict(case.params))


TASK = Task(
    entry="gelu_bf16",
    signature="gelu_bf16(input: torch.Tensor, approximate: str='none') -> torch.Tensor",
    description=(
        "Gaussian Error Linear Unit of every element of a contiguous torch.bfloat16 tensor of any "
        "shape, returning a new torch.bfloat16 tensor of the same shape (input unchanged). "
        "approximate='none': x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2))); approximate='tanh': "
        "0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))). Compute in float32 (load, "
        "convert, evaluate, round once on store), as PyTorch does. NaN stays NaN; large |x| must "
        "saturate (x for x >> 0, -0 or 0 for x << 0) without overflow turning into NaN. Cases: "
        "both forms, odd 1-D to 3-D shapes, outliers, signed zeros, large values of both signs, "
        "NaN."
    ),
    math=r"\mathrm{GELU}(x) = x\,\Phi(x) = \tfrac{x}{2}\left(1 + \mathrm{erf}(x/\sqrt{2})\right)",
    precision=(
        "torch.bfloat16 in and out, evaluated in float32 and rounded once to bfloat16. Tolerance "
        "rtol=8e-3, atol=1e-5: two float32 evaluations rounded to bfloat16 differ by at most one "
        "bfloat16 ulp, and one bfloat16 ulp is at most 2^-7 = 7.8e-3 relative; atol covers tiny "
        "negative results (x < -5), where 1 + erf(x / sqrt(2)) cancels in float32."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, dtype=torch.bfloat16),
        Case((37, 1023), seed=2, dtype=torch.bfloat16, dist="outlier"),
        Case((3, 129, 65), seed=3, dtype=torch.bfloat16, dist="corner"),
        Case((2049,), seed=4, dtype=torch.bfloat16, params={"approximate": "tanh"}),
        Case(
            (511, 17), seed=5, dtype=torch.bfloat16, dist="outlier", params={"approximate": "tanh"}
        ),
        Case(
            (7, 9, 33), seed=6, dtype=torch.bfloat16, dist="corner", params={"approximate": "tanh"}
        ),
    ),
    bench=(
        Case((1 << 27,), seed=11, dtype=torch.bfloat16),
        Case((16384, 16384), seed=12, dtype=torch.bfloat16, params={"approximate": "tanh"}),
    ),
    flops=lambda c: 12.0 * numel(c.shape),
    bytes_moved=lambda c: 4.0 * numel(c.shape),
    tolerance=Tolerance(rtol=8e-3, atol=1e-5),
)
