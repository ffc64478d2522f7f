"""Math/mul: element-wise product with broadcasting, type promotion and an optional `out`."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e4, -1e4, 1e-30, float("inf"), float("-inf"), float("nan"))


def reference(input, other, out=None):
    return torch.mul(input, other, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    p = case.params
    a_shape, b_shape = p.get("a", case.shape), p.get("b", case.shape)
    if p.get("ints"):  # small integers: products stay well inside int32
        a = draw.integers(a_shape, -1000, 1000, dtype=torch.int32)
        b = draw.integers(b_shape, -1000, 1000, dtype=torch.int32)
    else:
        a = draw.tensor(a_shape, specials=SPECIALS)
        b = p["scalar"] if "scalar" in p else draw.tensor(b_shape, specials=SPECIALS)
        if p.get("int_a"):  # integer tensor times float: promoted to float32
            a = draw.integers(a_shape, -50, 50, dtype=torch.int64)
    out = torch.zeros(case.shape, dtype=torch.result_type(a, b)) if p.get("out") else None
    return Inputs((a, b, None if out is None else out.to(device)))


def bytes_moved(case: Case) -> float:
    p = case.params
    b = 0 if "scalar" in p else numel(p.get("b", case.shape))
    return 4.0 * (numel(case.shape) + numel(p.get("a", case.shape)) + b)


TASK = Task(
    entry="mul",
    signature="mul(input, other, out=None)",
    description=(
        "Multiply `input` element-wise by `other`, as torch.mul: `other` is a tensor or a "
        "Python number; tensor operands broadcast to a common shape and the result dtype "
        "follows torch's type promotion (torch.result_type). If `out` (a tensor of the result "
        "shape and dtype) is given, write the result into it and return it. Cases: float32 "
        "tensors of equal odd shapes, broadcasting of (n, 1) against (1, m) and of a row "
        "against a 3-D tensor, a float32 tensor times a Python float, int32 times int32 "
        "(exact), and int64 times float32 (a float32 result); normal, outlier and corner "
        "values (signed zeros, +-1e4, 1e-30, +-inf, NaN: 0 * inf is NaN); one case passes `out`."
    ),
    math=r"\mathrm{out}_i = \mathrm{input}_i \cdot \mathrm{other}_i",
    precision=(
        "Computed in the result dtype (float32 or int32); a float32 product is a single "
        "correctly rounded operation, judged with rtol=1e-5, atol=1e-6; integer results exact. "
        "NaN and +-inf must appear exactly where torch.mul puts them."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 1023), seed=1),
        Case((129, 65), seed=2, dist="outlier", params={"a": (129, 1), "b": (1, 65)}),
        Case((3, 129, 65), seed=3, dist="corner", params={"b": (65,), "out": True}),
        Case((5, 7, 33), seed=4, dist="corner", params={"scalar": 0.1}),
        Case((1021, 3), seed=5, params={"ints": True, "b": (3,)}),
        Case((255, 9), seed=6, dist="outlier", params={"int_a": True}),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((8192, 8192), seed=12, params={"b": (8192,)}),
        Case((1 << 27,), seed=13, params={"scalar": 1.5}),
    ),
    flops=lambda c: 1.0 * numel(c.shape),
    bytes_moved=bytes_moved,
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    inplace=(2,),
)
