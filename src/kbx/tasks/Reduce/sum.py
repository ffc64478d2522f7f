"""Reduce/sum: sum of a float32 tensor over one or several dims, keepdim optional."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

RTOL, NTOL = 1e-5, 1e-5  # see check(); 1e-10 each when dtype=torch.float64


def reference(input, dim, keepdim=False, dtype=None):
    return torch.sum(input, dim, keepdim=keepdim, dtype=dtype)


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(case.shape)
    p = dict(case.params)
    return Inputs((x, p.pop("dim")), p)


def check(inputs: Inputs, out) -> str | None:
    """|out - exact| <= RTOL * |exact| + NTOL * ||x over the reduced dims||_2, exact in float64.

    A float32 sum's rounding error depends on the summation order; for any reasonable order
    (blocked, tree, split) it stays far below 1e-5 of the reduced slice's L2 norm, while rounding
    the inputs to half or bfloat16 precision first (error ~1e-4 of the norm) does not. With
    dtype=torch.float64 the sum must be float64-accurate (a float32 accumulator fails).
    """
    x, dim = inputs.args
    keepdim = inputs.kwargs.get("keepdim", False)
    f64 = inputs.kwargs.get("dtype") == torch.float64
    rtol, ntol = (1e-10, 1e-10) if f64 else (RTOL, NTOL)
    x64 = x.double()
    want = torch.sum(x64, dim, keepdim=keepdim).cpu()
    norm = torch.sum(x64 * x64, dim, keepdim=keepdim).sqrt().cpu()
    err = (out.double() - want).abs()
    bound = rtol * want.abs() + ntol * norm
    bad = ~(err <= bound)  # NaN fails
    if bad.any():
        i = int(torch.argmax(torch.where(bad, err / bound, 0.0).reshape(-1).nan_to_num(1e300)))
        return (
            f"{int(bad.sum())}/{bad.numel()} sums off by more than {rtol:g}*|sum| + "
            f"{ntol:g}*||slice||_2; worst: got {out.reshape(-1)[i].item():.9g}, exact "
            f"{want.reshape(-1)[i].item():.9g}"
        )
    return None


TASK = Task(
    entry="sum",
    signature="sum(input, dim, keepdim=False, dtype=None)",
    description=(
        "Sum the float32 tensor `input` (1-D to 4-D) over `dim`, an int (possibly negative) or a "
        "tuple of ints, as torch.sum(input, dim, keepdim, dtype=dtype). With keepdim=True the "
        "reduced dims stay with size 1, otherwise they are removed. `dtype` is None (float32 "
        "result) or torch.float64 (the input is converted to float64 and summed in float64). "
        "Cases cover single dims, negative dims, non-adjacent tuples, all dims at once, and "
        "keepdim both ways."
    ),
    math=r"y_{i} = \sum_{j \in \mathrm{dims}} x_{i,j}",
    precision=(
        "float32 in; accumulate in float32 or wider; any summation order. Judged against the "
        "exact (float64) sum s: |y - s| <= 1e-5 |s| + 1e-5 ||x_slice||_2, where x_slice is the "
        "set of values summed into y. With dtype=torch.float64 the output is float64 and must be "
        "float64-accurate: the same bound with 1e-10 for both coefficients."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 1023), seed=1, params={"dim": 1}),
        Case((129, 65), seed=2, dist="outlier", params={"dim": 0, "keepdim": True}),
        Case((5, 63, 33), seed=3, dist="corner", params={"dim": -2}),
        Case((7, 9, 11, 13), seed=4, params={"dim": (0, 2), "keepdim": True}),
        Case((3, 17, 5, 129), seed=5, dist="outlier", params={"dim": (-1, 1)}),
        Case((11, 23, 31), seed=6, params={"dim": (0, 1, 2), "dtype": torch.float64}),
    ),
    bench=(
        Case((1 << 27,), seed=11, params={"dim": 0}),
        Case((8192, 16384), seed=12, params={"dim": -1}),
        Case((64, 8192, 256), seed=13, params={"dim": 1}),
    ),
    flops=lambda c: float(numel(c.shape)),
    bytes_moved=lambda c: 4.0 * numel(c.shape),
    tolerance=Tolerance(rtol=RTOL, atol=0.0),  # unused: check() judges the values
    check=check,
)
