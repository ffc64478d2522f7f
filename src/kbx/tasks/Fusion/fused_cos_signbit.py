"""Fusion/fused_cos_signbit: element-wise cosine and the sign bit of that cosine."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Zeros, a large argument (needs a full range reduction) and the float32 numbers closest to odd
# multiples of pi/2, whose cosines are tiny (|cos| ~ 1e-8 .. 1e-7) but have a definite sign.
SPECIALS = (0.0, -0.0, 1e4, -3e3, 1.5707964, -1.5707964, 4.712389, 7.853982, -10.995574)


def reference(input: torch.Tensor):
    c = torch.cos(input)
    return c, torch.signbit(c)


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(
        case.shape, specials=SPECIALS, scale=case.params.get("scale", 3.0)
    )
    return Inputs((x,))


TASK = Task(
    entry="fused_cos_signbit",
    signature="fused_cos_signbit(input: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]",
    description=(
        "For a contiguous float32 tensor `input` (1-D to 3-D) return the tuple (c, s): "
        "c = cos(input), a new float32 tensor of the same shape, and s = signbit(c), a bool "
        "tensor of the same shape that is True where c has its sign bit set (negative values). "
        "Inputs are finite: N(0, 3^2) values (so both signs are frequent), outliers up to ~60, "
        "and in the corner case signed zeros, arguments of 1e4 and -3e3 (a correct range "
        "reduction is needed) and the float32 numbers nearest to odd multiples of pi/2, whose "
        "cosines are of order 1e-8 with a definite sign that s must get right."
    ),
    math=r"c = \cos x,\quad s = [\,c < 0\,]",
    precision=(
        "float32 in and out, cos accurate to a few ulp over the whole float32 range (e.g. "
        "libdevice cos or tl.cos, not a reduced-range approximation); c within rtol=1e-5, "
        "atol=1e-6; s exact."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier"),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((2049, 3), seed=4, dist="corner", params={"scale": 30.0}),
        Case((511, 17), seed=5, dist="outlier", params={"scale": 1.0}),
    ),
    bench=(
        Case((8192, 8192), seed=11),
        Case((1 << 27,), seed=12),
    ),
    flops=lambda c: 20.0 * numel(c.shape),
    bytes_moved=lambda c: 9.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
