"""Random/logspace: `steps` values base^e with exponents evenly spaced from start to end."""

import math

import torch

from kbx.suite.cases import table
from kbx.suite.inputs import Draw
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(
    start,
    end,
    steps,
    base=10.0,
    dtype=None,
    layout=torch.strided,
    device=None,
    requires_grad=False,
):
    # evaluated in float64 and rounded once, so the reference is exact to float32 precision
    exact = torch.logspace(
        start, end, steps, base, dtype=torch.float64, layout=layout, device=device
    )
    return exact.to(dtype or torch.get_default_dtype()).requires_grad_(requires_grad)


def make_inputs(case: Case, device: str) -> Inputs:
    p = case.params
    draw = Draw(case, device)
    start = draw.uniform((), *p["start"], dtype=torch.float64).item()
    end = draw.uniform((), *p["end"], dtype=torch.float64).item()
    if p.get("integral"):  # whole exponents: exact powers of the base
        start, end = float(round(start)), float(round(end))
    steps = case.shape[0]
    return Inputs(
        (start, end, steps),
        {"base": p.get("base", 10.0), "dtype": p.get("dtype"), "device": device},
    )


_case = table("start", "end")  # shape: steps; start, end: the ranges the exponents are drawn from


TASK = Task(
    entry="logspace",
    signature=(
        "logspace(start, end, steps, base=10.0, dtype=None, layout=torch.strided, device=None, "
        "requires_grad=False)"
    ),
    description=(
        "Deterministic (despite the category name): return a new 1-D float32 tensor of `steps` "
        "elements on `device` whose i-th value is base ** (start + i * (end - start) / (steps - "
        "1)), like torch.logspace: the first is base**start, the last base**end, and steps = 1 "
        "gives [base**start]. start and end are Python floats (either order), steps a Python "
        "int >= 1, base a positive Python float; dtype is None or torch.float32 (float32 "
        "output either way); layout stays strided and requires_grad False. Cases: base 10, 2, "
        "0.5, e and 3.7, exponent spans up to +-100 (for base 2), descending and whole-number "
        "exponents, steps = 1 and up to 100003 values. The kernel itself generates the values."
    ),
    math=r"y_i = b^{\,s + i\,(e - s)/(n - 1)},\ i = 0, \ldots, n-1",
    precision=(
        "float32 out; judged against base**exponent evaluated in float64 and rounded, with "
        "rtol=1e-5 (a float32 exponent of magnitude 100 alone costs ~3e-6, so a float32 kernel "
        "passes; computing the exponent or the power in float64 is more accurate)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        _case(100003, 1, (-10.0, -5.0), (5.0, 10.0)),
        _case(4099, 2, (-100.0, -60.0), (60.0, 100.0), base=2.0, dtype=torch.float32),
        _case(1, 3, (-3.0, 3.0), (0.0, 1.0)),
        _case(1025, 4, (20.0, 40.0), (-40.0, -20.0), base=0.5),
        _case(7777, 5, (-30.0, -10.0), (10.0, 30.0), base=math.e),
        _case(65537, 6, (0.0, 0.01), (0.01, 0.02), base=3.7),
        _case(141, 7, (-12.0, -5.0), (5.0, 12.0), integral=True),
        _case(2, 8, (-1.0, 1.0), (2.0, 3.0), base=2.0),
    ),
    bench=(
        _case(1 << 26, 11, (-20.0, -10.0), (10.0, 20.0)),
        _case(3 << 25, 12, (-100.0, -50.0), (50.0, 100.0), base=2.0),
    ),
    flops=lambda c: 4.0 * c.shape[0],
    bytes_moved=lambda c: 4.0 * c.shape[0],
    tolerance=Tolerance(rtol=1e-5, atol=0.0),
)
