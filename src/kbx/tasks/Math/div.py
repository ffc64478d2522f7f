"""Math/div: input / other with rounding_mode None, 'trunc' or 'floor' (torch's exact semantics)."""

import torch

from kbx.suite.compare import value_mismatch
from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros (division by zero of either sign), 0.1 and 3 (inexact quotients), huge values,
# infinities and NaN: drawn in both operands.
SPECIALS = (0.0, -0.0, 1.0, -1.0, 0.1, 3.0, 1e30, float("inf"), float("-inf"), float("nan"))
TOL = Tolerance(rtol=1e-5, atol=1e-6)


def reference(input, other, rounding_mode=None, out=None):
    if input.is_floating_point() and not isinstance(other, torch.Tensor):
        # torch's CUDA kernels divide by a Python number as a * (1 / b), its CPU kernels as a / b:
        # a 0-d tensor on the input's device gives the IEEE quotient a / b everywhere.
        other = torch.tensor(other, dtype=input.dtype, device=input.device)
    return torch.div(input, other, rounding_mode=rounding_mode, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    """case.shape is the output shape; params y (broadcastable shape) or scalar give `other`."""
    p = case.params
    draw = Draw(case, device)
    ys = p.get("y", case.shape)
    if case.dtype.is_floating_point and p.get("whole"):  # whole numbers divided by a scalar
        x = draw.integers(case.shape, -1000, 1001, dtype=case.dtype)
    elif case.dtype.is_floating_point:
        x = draw.tensor(case.shape, specials=SPECIALS)
    else:
        x = draw.integers(case.shape, -1000, 1001, dtype=case.dtype)
    if "scalar" in p:
        y = p["scalar"]
    elif case.dtype.is_floating_point:
        y = draw.tensor(ys, specials=SPECIALS)
    else:  # nonzero divisors of both signs: integer division by zero is an error in torch
        y = draw.integers(ys, 1, 50, dtype=case.dtype) * (2 * draw.integers(ys, 0, 2) - 1).to(
            case.dtype
        )
    out = None
    if p.get("out"):
        out = torch.zeros(case.shape, dtype=torch.result_type(x, y), device=device)
    return Inputs((x, y, p.get("mode"), out))


def check(inputs: Inputs, got) -> str | None:
    """The tolerance comparison, plus: every zero must carry torch's sign (e.g. -7 // inf)."""
    want = reference(*[a.clone() if isinstance(a, torch.Tensor) else a for a in inputs.args])
    for g in (got[0], got[1][0]):  # the returned tensor and the final contents of `out`
        if g is None:
            continue
        g, w = g.cpu(), want.cpu()
        reason = value_mismatch(g, w, TOL)
        if reason:
            return reason
        if w.is_floating_point():
            zero = (w == 0) & (g == 0)
            flipped = zero & (torch.signbit(g) != torch.signbit(w))
            if flipped.any():
                i = tuple(int(v) for v in torch.nonzero(flipped)[0])
                return (
                    f"{int(flipped.sum())} zeros have the wrong sign, e.g. at {i}: got "
                    f"{g[i].item()}, expected {w[i].item()}"
                )
    return None


def nbytes(c: Case) -> float:
    y = 0 if "scalar" in c.params else numel(c.params.get("y", c.shape))
    return float(c.dtype.itemsize * (2 * numel(c.shape) + y))


TASK = Task(
    entry="div",
    signature="div(input, other, rounding_mode=None, out=None)",
    description=(
        "Divide `input` by `other` element-wise like torch.div, with broadcasting; `other` may "
        "be a tensor or a Python number. rounding_mode=None: true division (integer inputs give "
        "float32); 'trunc': the float32 quotient rounded toward zero, trunc(a / b); 'floor': "
        "floor division with Python's float semantics (torch's div_floor): q = (a - fmod(a, b)) "
        "/ b, minus 1 when the remainder is nonzero and its sign differs from b's, then rounded "
        "to the nearest whole number; a zero result takes the sign of a / b. Hence 1 // 0.1 is 9 "
        "(not floor(1 / 0.1) = 10) and inf // 2 is NaN. Division by zero follows IEEE for "
        "floats in every mode (+-inf by the signs of both operands, 0/0 = NaN); zeros must carry "
        "torch's sign (trunc(-0.3) = -0.0). Integer tensors with 'trunc' or 'floor' give exact "
        "integer results (C truncation, resp. rounding toward -inf). If `out` is given, write "
        "into it and return it. Cases: all three modes on float32 normal, outlier and corner "
        "values (signed zeros, +-1, 0.1, 3, 1e30, +-inf, NaN in both operands), row broadcasts, "
        "whole numbers divided by the scalar 0.1 in floor and trunc mode, int32 tensors in all "
        "three modes (nonzero divisors), and a case passing `out`."
    ),
    math=r"\mathrm{out}_i = \mathrm{round}(\mathrm{input}_i / \mathrm{other}_i)",
    precision=(
        "float32 in and out, computed in float32 with correctly rounded (IEEE) division: "
        "rtol=1e-5, atol=1e-6, NaN/inf exact and zeros with the right sign; integer results exact."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier", params={"y": (1023,), "mode": "trunc"}),
        Case((3, 129, 65), seed=3, dist="corner", params={"mode": "floor"}),
        Case((2047, 5), seed=4, dist="corner", params={"out": True}),
        Case((5, 7, 301), seed=5, dist="corner", params={"y": (7, 1), "mode": "trunc"}),
        Case((61, 129), seed=6, params={"whole": True, "scalar": 0.1, "mode": "floor"}),
        Case((129, 61), seed=7, params={"whole": True, "scalar": -0.3, "mode": "trunc"}),
        Case((611, 13), seed=8, dtype=torch.int32, params={"y": (13,), "mode": "floor"}),
        Case((257, 33), seed=9, dtype=torch.int32, params={"mode": "trunc", "out": True}),
        Case((33, 257), seed=10, dtype=torch.int32),
    ),
    bench=(
        Case((1 << 26,), seed=11),
        Case((8192, 16384), seed=12, params={"y": (16384,), "mode": "floor"}),
    ),
    flops=lambda c: 4.0 * numel(c.shape),
    bytes_moved=nbytes,
    tolerance=TOL,
    check=check,
    inplace=(3,),
)
