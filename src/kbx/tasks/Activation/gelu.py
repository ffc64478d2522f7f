"""Activation/gelu: element-wise GELU, exact (erf) or tanh-approximated."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return torch.nn.functional.gelu(input, approximate=approximate)


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(case.shape)
    return Inputs((x,), dict(case.params))


TASK = Task(
    entry="gelu",
    signature="gelu(input: torch.Tensor, approximate: str='none') -> torch.Tensor",
    description=(
        "Apply the Gaussian Error Linear Unit to every element of `input` and return a new tensor "
        "of the same shape and dtype. With approximate='none' use the exact form "
        "x * Phi(x), where Phi is the standard normal CDF; with approximate='tanh' use "
        "0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))."
    ),
    math=r"\mathrm{GELU}(x) = x\,\Phi(x) = \tfrac{x}{2}\left(1 + \mathrm{erf}(x/\sqrt{2})\right)",
    precision="float32 in, float32 out, computed in float32.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier"),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((2049,), seed=4, params={"approximate": "tanh"}),
        Case((511, 17), seed=5, dist="outlier", params={"approximate": "tanh"}),
    ),
    bench=(
        Case((1 << 24,), seed=11),
        Case((1 << 27,), seed=12),
    ),
    flops=lambda c: 12.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
