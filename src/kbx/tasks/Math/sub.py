"""Math/sub: element-wise input - alpha * other with broadcasting and type promotion."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e4, -1e4, 1e-30, float("inf"), float("-inf"), float("nan"))


def reference(input, other, *, alpha=1, out=None):
    return torch.sub(input, other, alpha=alpha, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    p = case.params
    a_shape, b_shape = p.get("a", case.shape), p.get("b", case.shape)
    if p.get("ints"):  # small integers: exact, no overflow
        a = draw.integers(a_shape, -1000, 1000, dtype=torch.int32)
        b = draw.integers(b_shape, -1000, 1000, dtype=torch.int32)
    else:
        a = draw.tensor(a_shape, specials=SPECIALS)
        b = p["scalar"] if "scalar" in p else draw.tensor(b_shape, specials=SPECIALS)
        if p.get("int_a"):  # integer tensor minus float: promoted to float32
            a = draw.integers(a_shape, -50, 50, dtype=torch.int64)
    kwargs = {"alpha": p["alpha"]} if "alpha" in p else {}
    return Inputs((a, b), kwargs)


def bytes_moved(case: Case) -> float:
    p = case.params
    b = 0 if "scalar" in p else numel(p.get("b", case.shape))
    return 4.0 * (numel(case.shape) + numel(p.get("a", case.shape)) + b)


TASK = Task(
    entry="sub",
    signature=(
        "sub(input: torch.Tensor, other: torch.Tensor, *, alpha: float=1, "
        "out: torch.Tensor=None) -> torch.Tensor"
    ),
    description=(
        "Return input - alpha * other element-wise, as torch.sub: `other` is a tensor or a "
        "Python number, tensor operands broadcast to a common shape, the result dtype follows "
        "torch's type promotion (torch.result_type), `alpha` is a Python number (an int for "
        "integer results). If the keyword `out` is given, write the result into it and return "
        "it (no case passes it). Cases: float32 tensors of equal odd shapes with the default "
        "alpha and alpha=2.5, (n, 1) against (1, m) with alpha=-0.5, a row against a 3-D "
        "tensor, a tensor minus a Python float with alpha=-2, int32 tensors with alpha=3 "
        "(exact), int64 minus float32 (a float32 result); normal, outlier and corner values "
        "(signed zeros, +-1e4, 1e-30, +-inf, NaN: inf - inf is NaN)."
    ),
    math=r"\mathrm{out}_i = \mathrm{input}_i - \alpha\,\mathrm{other}_i",
    precision=(
        "Computed in the result dtype (float32 or int32), rtol=1e-5, atol=1e-6 for floats, "
        "integers exact. A fused multiply-add a - alpha*b is fine: where alpha*b is inexact "
        "(alpha=2.5) the inputs are small, so the double-rounding difference stays below atol."
        " NaN and +-inf must appear exactly where torch.sub puts them."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 1023), seed=1),
        Case(
            (129, 65), seed=2, dist="outlier", params={"a": (129, 1), "b": (1, 65), "alpha": -0.5}
        ),
        Case((3, 129, 65), seed=3, dist="corner", params={"b": (65,)}),
        Case((5, 7, 33), seed=4, dist="corner", params={"scalar": 0.75, "alpha": -2}),
        Case((1021, 3), seed=5, params={"ints": True, "b": (3,), "alpha": 3}),
        Case((255, 9), seed=6, dist="outlier", params={"int_a": True}),
        Case((4099,), seed=7, params={"alpha": 2.5}),
    ),
    bench=(
        Case((1 << 26,), seed=11, params={"alpha": 2.5}),
        Case((8192, 8192), seed=12, params={"b": (8192,)}),
        Case((1 << 27,), seed=13, params={"scalar": 1.5, "alpha": 2}),
    ),
    flops=lambda c: 2.0 * numel(c.shape),
    bytes_moved=bytes_moved,
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
