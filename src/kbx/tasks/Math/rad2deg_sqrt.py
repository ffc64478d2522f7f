"""Math/rad2deg_sqrt: two element-wise results of one input, radians to degrees and sqrt."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, a negative, huge and tiny values, infinities and NaN.
SPECIALS = (0.0, -0.0, -1.0, 1e30, 1e-30, float("inf"), float("-inf"), float("nan"))


def reference(input: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.rad2deg(input), torch.sqrt(input)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    x = draw.tensor(case.shape, specials=SPECIALS, scale=case.params.get("scale", 1.0))
    if case.params.get("positive"):
        x = x.abs()
    return Inputs((x,))


TASK = Task(
    entry="rad2deg_sqrt",
    signature="rad2deg_sqrt(input: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]",
    description=(
        "For the float32 tensor `input` (any shape) return a tuple of two new float32 tensors "
        "of its shape: the angles converted from radians to degrees (x * 180 / pi, as "
        "torch.rad2deg) and the square roots (torch.sqrt: NaN for x < 0 and -inf, +-0 and +inf "
        "unchanged). Cases use odd 1-D to 3-D shapes: raw normal draws (half negative, so half "
        "the roots are NaN), absolute values of normal draws scaled by 1 to 100 and of outlier"
        " draws, and corner values (signed zeros, -1, 1e30, 1e-30, +-inf, NaN)."
    ),
    math=r"d_i = x_i \cdot 180/\pi,\quad s_i = \sqrt{x_i}",
    precision=(
        "float32 in, float32 out, computed in float32; rtol=1e-5, atol=1e-6 on both outputs. "
        "NaN and +-inf must appear exactly where torch puts them."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier", params={"positive": True}),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((2047, 5), seed=4, params={"positive": True, "scale": 100.0}),
        Case((257, 31), seed=5, dist="corner", params={"positive": True}),
    ),
    bench=(
        Case((1 << 26,), seed=11, params={"positive": True}),
        Case((8192, 16384), seed=12),
    ),
    flops=lambda c: 2.0 * numel(c.shape),
    bytes_moved=lambda c: 12.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
