"""Math/mul_bf16: element-wise product of two bfloat16 tensors (not in the paper)."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, a value whose square overflows bfloat16, a tiny one, infinities and NaN.
SPECIALS = (0.0, -0.0, 1e30, -3.0e20, 1e-20, float("inf"), float("-inf"), float("nan"))


def reference(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    return torch.mul(input, other)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    a = draw.tensor(case.shape, specials=SPECIALS)
    b = draw.tensor(case.params.get("b", case.shape), specials=SPECIALS)
    return Inputs((a, b))


TASK = Task(
    entry="mul_bf16",
    signature="mul_bf16(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor",
    description=(
        "Multiply two bfloat16 tensors element-wise and return a bfloat16 tensor, as "
        "torch.mul. `other` has the shape of `input` or broadcasts against it (one case "
        "multiplies a (n, m) tensor by a row of m). Cases use odd 1-D to 3-D shapes with "
        "normal, outlier and corner values (signed zeros, values whose products overflow to "
        "inf, tiny values, +-inf, NaN: 0 * inf is NaN)."
    ),
    math=r"\mathrm{out}_i = \mathrm{input}_i \cdot \mathrm{other}_i",
    precision=(
        "bfloat16 in, bfloat16 out. The exact product of two bfloat16 values fits in float32, "
        "so computing in float32 and rounding once to bfloat16 gives torch's correctly rounded "
        "result. Judged with rtol=0.008 (just over one bfloat16 ulp, 2^-7 relative at most) "
        "and atol=1e-38, so a rounding-mode difference (truncation instead of round-to-nearest,"
        " as Triton's CPU interpreter does) passes while any error of two ulp or more, e.g. a "
        "1% perturbation, fails. NaN and +-inf must appear exactly where torch.mul puts them."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, dtype=torch.bfloat16),
        Case((37, 1023), seed=2, dtype=torch.bfloat16, dist="outlier"),
        Case((3, 129, 65), seed=3, dtype=torch.bfloat16, dist="corner"),
        Case((255, 33), seed=4, dtype=torch.bfloat16, dist="corner", params={"b": (33,)}),
    ),
    bench=(
        Case((1 << 27,), seed=11, dtype=torch.bfloat16),
        Case((8192, 16384), seed=12, dtype=torch.bfloat16),
    ),
    flops=lambda c: 1.0 * numel(c.shape),
    bytes_moved=lambda c: 2.0 * (2 * numel(c.shape) + numel(c.params.get("b", c.shape))),
    tolerance=Tolerance(rtol=0.008, atol=1e-38),
    paper=False,
)
