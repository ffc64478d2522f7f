"""Activation/tanh: element-wise hyperbolic tangent, optionally into `out_tensor`."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# tanh(+-inf) = +-1, tanh(nan) = nan, tanh(+-0) = +-0; +-1e4 saturate; 1e-30 stays 1e-30.
SPECIALS = (0.0, -0.0, 1e4, -1e4, 1e-30, float("inf"), float("-inf"), float("nan"))


def reference(input_tensor: torch.Tensor, out_tensor: torch.Tensor | None = None) -> torch.Tensor:
    return torch.tanh(input_tensor, out=out_tensor)


def make_inputs(case: Case, device: str) -> Inputs:
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS)
    out = d.tensor(case.shape, dist="normal") if case.params.get("out") else None  # stale data
    return Inputs((x, out))


TASK = Task(
    entry="tanh",
    signature="tanh(input_tensor, out_tensor=None)",
    description=(
        "Hyperbolic tangent of every element of a contiguous float32 tensor of any shape "
        "(+-inf -> +-1, NaN -> NaN; tiny x -> x, so relative accuracy matters near 0, where "
        "1 - 2 / (exp(2x) + 1) cancels). `out_tensor` is passed positionally: None (return a new "
        "tensor) or a contiguous float32 tensor of the input's shape, holding stale values, that "
        "must receive the result and be returned. The input is not modified; the final "
        "contents of `out_tensor` are judged too. Cases: odd 1-D to 3-D shapes, outliers, "
        "corner values (signed zeros, +-1e4, 1e-30, +-inf, NaN), with and without an output."
    ),
    math=r"\tanh(x) = \frac{e^{x} - e^{-x}}{e^{x} + e^{-x}}",
    precision=(
        "float32 in and out, computed in float32; rtol=1e-5, atol=1e-6 (a few float32 ulps; a "
        "half-precision evaluation is about 100x further off)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier", params={"out": True}),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((515, 33), seed=4, dist="corner", params={"out": True}),
        Case((2, 3, 5, 7, 11), seed=5, dist="outlier"),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((16384, 8192), seed=12, params={"out": True}),
    ),
    flops=lambda c: 5.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    inplace=(1,),
)
