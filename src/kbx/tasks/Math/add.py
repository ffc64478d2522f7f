"""Math/add: input + alpha * other with broadcasting, a scalar `other`, int tensors and `out`."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e30, -1e30, float("inf"), float("-inf"), float("nan"))


def reference(input, other, alpha=1, out=None):
    return torch.add(input, other, alpha=alpha, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    """case.shape is the output shape; params x/y give the operands' (broadcastable) shapes."""
    p = case.params
    draw = Draw(case, device)
    xs, ys = p.get("x", case.shape), p.get("y", case.shape)
    if case.dtype.is_floating_point:
        x = draw.tensor(xs, specials=SPECIALS)
        y = p["scalar"] if "scalar" in p else draw.tensor(ys, specials=SPECIALS)
    else:
        x = draw.integers(xs, -(1 << 20), 1 << 20, dtype=case.dtype)
        y = draw.integers(ys, -(1 << 20), 1 << 20, dtype=case.dtype)
    out = torch.zeros(case.shape, dtype=case.dtype, device=device) if p.get("out") else None
    return Inputs((x, y, p.get("alpha", 1), out))


def nbytes(c: Case) -> float:
    p, size = c.params, c.dtype.itemsize
    operands = numel(c.params.get("x", c.shape)) + (
        0 if "scalar" in p else numel(p.get("y", c.shape))
    )
    return float(size * (operands + numel(c.shape)))


TASK = Task(
    entry="add",
    signature="add(input, other, alpha=1, out=None)",
    description=(
        "Return input + alpha * other element-wise (like torch.add), with `other` a tensor "
        "broadcast against `input` (NumPy rules; either operand may be the smaller one) or a "
        "Python number, and alpha a Python number. The result has the broadcast shape and "
        "torch's promoted dtype: float32 for float32 operands, int32 for int32 operands (exact, "
        "wrapping on overflow). IEEE rules for inf and NaN (inf + -inf is NaN). If `out` is given "
        "(the result's shape and dtype), write into it and return it. Cases: same-shape, "
        "row-, column- and two-sided broadcasts, a scalar `other`, alpha in {1, 0.5, -2, 0.1, 3}, "
        "normal, outlier and corner values (signed zeros, +-1e30, +-inf, NaN), an int32 case and "
        "a case passing `out`."
    ),
    math=r"\mathrm{out}_i = \mathrm{input}_i + \alpha\,\mathrm{other}_i",
    precision=(
        "float32 in and out, computed in float32 (with or without a fused multiply-add): "
        "rtol=1e-5, atol=1e-6; integer results exact."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier", params={"y": (1023,), "alpha": 0.5}),
        Case((3, 129, 65), seed=3, dist="corner", params={"y": (3, 1, 65), "alpha": -2}),
        Case((61, 129), seed=4, params={"x": (1, 129), "y": (61, 1), "alpha": 0.1}),
        Case((257, 33), seed=5, params={"scalar": 20.0, "alpha": 0.1}),
        Case((2047, 5), seed=6, dtype=torch.int32, params={"y": (2047, 1), "alpha": 3, "out": 1}),
        Case((5, 7, 301), seed=7, dist="corner", params={"out": True}),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((8192, 16384), seed=12, params={"y": (16384,), "alpha": 0.5}),
    ),
    flops=lambda c: 2.0 * numel(c.shape),
    bytes_moved=nbytes,
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    inplace=(3,),
)
