"""Math/logit: element-wise log(z / (1 - z)), optionally clamping z to [eps, 1 - eps]."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Pre-images under the sigmoid: 0.5, exactly 0 and 1, NaN, and values a few ulp from 0 and 1.
SPECIALS = (0.0, float("inf"), float("-inf"), float("nan"), 20.0, -20.0, -80.0)


def reference(input: torch.Tensor, eps: float | None = None, out=None) -> torch.Tensor:
    return torch.special.logit(input, eps=eps, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    z = draw.tensor(case.shape, dtype=torch.float64, specials=SPECIALS, scale=2.0)
    x = torch.sigmoid(z)  # probabilities, with tails close to 0 and 1
    if case.params.get("widen"):
        x = 1.5 * x - 0.25  # about a third falls outside [0, 1]
    x = x.to(case.dtype)
    # `out` travels as a positional argument so that its final contents are judged too.
    out = torch.zeros_like(x) if case.params.get("out") else None
    return Inputs((x, case.params.get("eps"), out))


TASK = Task(
    entry="logit",
    signature="logit(input: torch.Tensor, eps: float=None, out: torch.Tensor=None) -> torch.Tensor",
    description=(
        "Return the logit log(z / (1 - z)) of every element of the float32 tensor `input` as a "
        "new float32 tensor of the same shape, as torch.special.logit. With eps=None, z = x: "
        "x outside [0, 1] gives NaN, 0 gives -inf and 1 gives +inf. With a float eps, z is x "
        "clamped to [lo, hi] with lo = float32(eps) and hi = 1 - lo computed in float32 (NaN "
        "stays NaN). If `out` (a float32 tensor of the same shape) is given, write the result "
        "into it and return it. Inputs are sigmoids of scaled normal or outlier draws, so "
        "many lie within a few ulp of 0 or 1; some cases widen them to about [-0.25, 1.25]. "
        "Corner cases add exact 0, 0.5, 1 and NaN. Cases cover eps None, 0, 1e-6 and 0.25, and "
        "one passes `out`."
    ),
    math=r"y_i = \ln\frac{z_i}{1 - z_i},\quad z_i = \min(\max(x_i, \epsilon), 1 - \epsilon)",
    precision=(
        "float32 in, float32 out, computed in float32 (the clamp bounds too, as torch does: "
        "near hi, 1 - z is tiny and depends on the exact bound); rtol=1e-5, atol=1e-6. NaN "
        "and +-inf must appear exactly where torch.special.logit puts them."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier", params={"eps": 1e-6}),
        Case((3, 129, 65), seed=3, dist="corner", params={"widen": True}),
        Case((2047, 5), seed=4, dist="corner", params={"eps": 0.25, "widen": True, "out": True}),
        Case((257, 31), seed=5, dist="outlier", params={"eps": 0.0, "widen": True}),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((8192, 16384), seed=12, params={"eps": 1e-6}),
    ),
    flops=lambda c: 4.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    inplace=(2,),
)
