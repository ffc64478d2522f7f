"""Activation/sigmoid: element-wise logistic function 1 / (1 + exp(-x)), optionally into `out`."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# sigmoid(+-inf) = 1 / 0, sigmoid(nan) = nan; +-1e4 saturate.
SPECIALS = (0.0, -0.0, 1e4, -1e4, float("inf"), float("-inf"), float("nan"))


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.sigmoid(input, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS)
    out = d.tensor(case.shape, dist="normal") if case.params.get("out") else None  # stale data
    return Inputs((x, out))


TASK = Task(
    entry="sigmoid",
    signature="sigmoid(input, out=None)",
    description=(
        "Logistic sigmoid of every element of a contiguous float32 tensor of any shape: "
        "1 / (1 + exp(-x)), so +inf -> 1, -inf -> 0, NaN -> NaN, and large negative x give "
        "tiny (possibly subnormal) values, not NaN. `out` is passed positionally: None (return a "
        "new tensor) or a contiguous float32 tensor of the input's shape, holding stale values, "
        "that must receive the result and be returned. The input is not modified; the final "
        "contents of `out` are judged too. Cases: odd 1-D to 3-D shapes, outliers, "
        "corner values (signed zeros, +-1e4, +-inf, NaN), with and without `out`."
    ),
    math=r"\sigma(x) = \frac{1}{1 + e^{-x}}",
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
    flops=lambda c: 4.0 * numel(c.shape),
    bytes_moved=lambda c: 8.0 * numel(c.shape),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    inplace=(1,),
)
