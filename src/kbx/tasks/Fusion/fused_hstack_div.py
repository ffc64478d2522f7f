"""Fusion/fused_hstack_div: torch.div(torch.hstack(tensors), divisor, rounding_mode=...)."""

import math

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1.0, 3.0, 1e4, -1e4, math.inf, -math.inf, math.nan)


def reference(tensors, divisor, *, rounding_mode=None, out=None):
    x = torch.hstack(tensors)
    if x.is_floating_point() and not isinstance(divisor, torch.Tensor):
        # torch's CUDA kernels divide by a Python number as x * (1 / d), its CPU kernels as x / d;
        # a 0-d tensor gives the IEEE quotient on both
        divisor = torch.tensor(divisor, dtype=x.dtype, device=x.device)
    y = torch.div(x, divisor, rounding_mode=rounding_mode)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(case: Case, device: str) -> Inputs:
    """case.shape is the stacked shape (columns in dim 1, or dim 0 for 1-D); params: widths
    (the pieces' sizes along that dim), div ('full' | 'row' | 'col' | a number), mode, specials."""
    p = case.params
    d = Draw(case, device)
    axis = 0 if len(case.shape) == 1 else 1
    floats = case.dtype.is_floating_point
    specials = SPECIALS if p.get("specials") else (0.0, -0.0, 1e4, -1e4)
    parts = []
    for w in p["widths"]:
        shape = list(case.shape)
        shape[axis] = w
        if floats:
            parts.append(d.tensor(shape, specials=specials, scale=3.0))
        else:
            parts.append(d.integers(shape, -1000, 1001, dtype=case.dtype))
    kind = p.get("div", "full")
    dshape = {"full": case.shape, "row": case.shape[-1:], "col": (case.shape[axis], 1)}
    if kind not in dshape:
        divisor = kind
    elif floats:  # specials in the divisor: division by +-0 and by +-inf, NaN
        divisor = d.tensor(dshape[kind], specials=specials)
    else:  # nonzero divisors of both signs: integer division by zero is an error in torch
        sign = 2 * d.integers(dshape[kind], 0, 2, dtype=case.dtype) - 1
        divisor = d.integers(dshape[kind], 1, 40, dtype=case.dtype) * sign
    return Inputs((parts, divisor), {"rounding_mode": p.get("mode")})


TASK = Task(
    entry="fused_hstack_div",
    signature="fused_hstack_div(tensors, divisor, *, rounding_mode=None, out=None)",
    description=(
        "Y = torch.div(torch.hstack(tensors), divisor, rounding_mode=rounding_mode). `tensors` "
        "is a list of 2 to 5 contiguous tensors of one dtype (float32 or int32) that agree in "
        "every dim but the stacking one: dim 1 for 2-D and 3-D pieces, dim 0 for 1-D pieces. "
        "`divisor` is a tensor of the pieces' dtype broadcastable to the stacked shape (the "
        "full shape, a row over the last dim, or a (size of dim 1, 1) column), or a Python "
        "number. rounding_mode None: true division, IEEE for floats (x/0 = +-inf, 0/0 = NaN, "
        "x/inf = +-0), and int32 inputs give a float32 quotient; 'trunc' rounds toward zero; "
        "'floor' rounds toward -inf with torch's float rule (Python's //: computed from fmod, "
        "so e.g. 1 // 0.1 is 9, not floor(1 / 0.1) = 10); int32 inputs with trunc/floor give "
        "int32 (nonzero divisors). Returns a new tensor; `out` is not passed. Cases: all three "
        "modes for float32 and int32, each divisor form, scalars, and corner floats (+-0, "
        "+-inf, NaN, exact quotients) in true division."
    ),
    math=r"Y = \mathrm{round}\big([X_1, \dots, X_n] \oslash D\big)",
    precision=(
        "float32 division correctly rounded or within 2 ulp (rtol=1e-6); floor/trunc results "
        "are whole numbers and must match; integer outputs exact."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 129), seed=1, params={"widths": (50, 7, 72)}),
        Case((23, 61), seed=2, dist="corner", params={"widths": (30, 31), "specials": True}),
        Case((45, 100), seed=3, dist="outlier", params={"widths": (33, 67), "mode": "floor"}),
        Case((1001,), seed=4, params={"widths": (500, 1, 500), "div": -0.3, "mode": "trunc"}),
        Case(
            (5, 40, 7),
            seed=5,
            dtype=torch.int32,
            params={"widths": (9, 31), "div": "col", "mode": "floor"},
        ),
        Case((31, 57), seed=6, dtype=torch.int32, params={"widths": (20, 37), "div": "row"}),
        Case((17, 80), seed=7, dtype=torch.int32, params={"widths": (40,) * 2, "mode": "trunc"}),
        Case((29, 66), seed=8, params={"widths": (11, 22, 33), "div": "row", "mode": "floor"}),
    ),
    bench=(
        Case((8192, 8192), seed=11, params={"widths": (2048,) * 4, "div": "row"}),
        Case(
            (4096, 16384),
            seed=12,
            dtype=torch.int32,
            params={"widths": (4096, 12288), "mode": "floor"},
        ),
    ),
    flops=lambda c: 1.0 * numel(c.shape),
    bytes_moved=lambda c: (
        4.0 * numel(c.shape) * (3 if c.params.get("div", "full") == "full" else 2)
    ),
    tolerance=Tolerance(rtol=1e-6, atol=0.0),
)
