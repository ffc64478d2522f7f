"""Math/mul_fp16: element-wise product of two float16 tensors (not in the paper)."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, a value whose square overflows float16, a small one whose products are
# subnormal, infinities and NaN.
SPECIALS = (0.0, -0.0, 6e4, -300.0, 1e-4, float("inf"), float("-inf"), float("nan"))


def reference(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    return torch.mul(input, other)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    a = draw.tensor(case.shape, specials=SPECIALS)
    b = draw.tensor(case.params.get("b", case.shape), specials=SPECIALS)
    return Inputs((a, b))


TASK = Task(
    entry="mul_fp16",
    signature="mul_fp16(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor",
    description=(
        "Multiply two float16 tensors element-wise and return a float16 tensor, as torch.mul. "
        "`other` has the shape of `input` or broadcasts against it (one case multiplies a "
        "(n, m) tensor by a row of m). Cases use odd 1-D to 3-D shapes with normal, outlier "
        "and corner values (signed zeros, 6e4 and -300 whose products overflow to inf, 1e-4 "
        "whose products are float16 subnormals, +-inf, NaN: 0 * inf is NaN)."
    ),
    math=r"\mathrm{out}_i = \mathrm{input}_i \cdot \mathrm{other}_i",
    precision=(
        "float16 in, float16 out. The exact product of two float16 values fits in float32, so "
        "computing in float32 and rounding once to float16 (round to nearest, subnormals kept) "
        "gives torch's correctly rounded result. Judged with rtol=1e-3 (just over one float16 "
        "ulp, 2^-10 relative at most) and atol=6e-8 (one subnormal step), so any error of two "
        "ulp or more, e.g. a 1% perturbation, fails. NaN and +-inf must appear exactly where "
        "torch.mul puts them."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, dtype=torch.float16),
        Case((37, 1023), seed=2, dtype=torch.float16, dist="outlier"),
        Case((3, 129, 65), seed=3, dtype=torch.float16, dist="corner"),
        Case((255, 33), seed=4, dtype=torch.float16, dist="corner", params={"b": (33,)}),
    ),
    bench=(
        Case((1 << 27,), seed=11, dtype=torch.float16),
        Case((8192, 16384), seed=12, dtype=torch.float16),
    ),
    flops=lambda c: 1.0 * numel(c.shape),
    bytes_moved=lambda c: 2.0 * (2 * numel(c.shape) + numel(c.params.get("b", c.shape))),
    tolerance=Tolerance(rtol=1e-3, atol=6e-8),
    paper=False,
)
