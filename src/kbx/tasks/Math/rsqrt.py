"""Math/rsqrt: element-wise reciprocal square root, with an optional output tensor."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Zero of both signs, a negative, huge, tiny (but normal) and infinite values.
SPECIALS = (0.0, -0.0, -1.0, 1e30, 1e-30, float("inf"), float("-inf"))


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.rsqrt(input, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    x = draw.tensor(case.shape, specials=SPECIALS)
    if case.params.get("positive"):
        x = x.abs()  # mostly finite, positive results
    # `out` travels as a positional argument so that its final contents are judged too.
    out = torch.zeros_like(x) if case.params.get("out") else None
    return Inputs((x, out))


TASK = Task(
    entry="rsqrt",
    signature="rsqrt(input: torch.Tensor, out: torch.Tensor=None) -> torch.Tensor",
    description=(
        "Return 1 / sqrt(x) for every element x of the float32 tensor `input` (any shape), as a "
        "new float32 tensor of the same shape. IEEE semantics as torch.rsqrt: negative inputs and "
        "-inf give NaN, +0 gives +inf, -0.0 gives -inf, +inf gives 0. If `out` (a float32 tensor "
        "of the same shape) is given, write the result into it and return it. Cases use 1-D to "
        "3-D shapes, normal values (about half negative), absolute values of normal and outlier "
        "draws, and corner values (signed zeros, -1, 1e30, 1e-30, +-inf); one case passes `out`. "
        "No subnormal inputs are drawn."
    ),
    math=r"\mathrm{out}_i = 1/\sqrt{x_i}",
    precision=(
        "float32 in, float32 out, computed in float32; approximate hardware rsqrt (a few ulp) is "
        "within the tolerance rtol=1e-5, atol=1e-6. NaN and +-inf must appear exactly where "
        "torch.rsqrt puts them."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier", params={"positive": True}),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((2047, 5), seed=4, params={"positive": True, "out": True}),
        Case((257, 31), seed=5, dist="corner", params={"positive": True}),
    ),
    bench=(
        Case((1 << 26,), seed=11, params={"positive": True}),
        Case((8192, 16384), seed=12),
    ),
    flops=lambda c: 2.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    inplace=(1,),
)
