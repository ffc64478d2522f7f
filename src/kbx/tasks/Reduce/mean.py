"""Reduce/mean: mean of a float32 tensor over one or several dims, keepdim, dtype and out."""

import torch

from kbx.suite.bounds import off_by
from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

RTOL, NTOL = 1e-5, 1e-5  # see check(); 1e-10 each when dtype=torch.float64


def reference(input_tensor, dim, keepdim=False, dtype=None, out=None):
    return torch.mean(input_tensor, dim, keepdim=keepdim, dtype=dtype, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    p = case.params
    x = Draw(case, device).tensor(case.shape, shift=p.get("shift", 0.0))
    keepdim, dtype = p.get("keepdim", False), p.get("dtype")
    out = None
    if p.get("out"):  # judged through `inplace`: its final contents must be the result
        shape = torch.mean(torch.empty(case.shape, device="meta"), p["dim"], keepdim=keepdim).shape
        out = torch.zeros(shape, dtype=dtype or torch.float32, device=device)
    return Inputs((x, p["dim"], keepdim, dtype, out))


def check(inputs: Inputs, out) -> str | None:
    """|y - exact| <= 1e-5 |exact| + 1e-5 ||slice||_2 / K, exact in float64 (K values averaged).

    Any reasonable float32 summation order stays far inside; rounding the inputs to half or
    bfloat16 precision does not. With dtype=torch.float64 the bound is 1e-10 for both terms.
    """
    x, dim, keepdim, dtype, out_arg = inputs.args
    ret, (final,) = out
    x64 = x.detach().cpu().double()
    rtol, ntol = (1e-10, 1e-10) if dtype == torch.float64 else (RTOL, NTOL)
    want = torch.mean(x64, dim, keepdim=keepdim)
    k = x64.numel() / max(want.numel(), 1)
    norm = torch.sum(x64 * x64, dim, keepdim=keepdim).sqrt() / k
    bound = rtol * want.abs() + ntol * norm
    claim = f"means off by more than {rtol:g}*|mean| + {ntol:g}*||slice||_2/K"
    reason = off_by(ret, want, bound, "returned tensor", claim)
    if reason is None and out_arg is not None:
        reason = off_by(final, want, bound, "out", claim)
    return reason


TASK = Task(
    entry="mean",
    signature="mean(input_tensor, dim, keepdim=False, dtype=None, out=None)",
    description=(
        "Mean of the float32 tensor `input_tensor` (1-D to 4-D) over `dim`, an int (possibly "
        "negative) or a tuple of ints, as torch.mean(input, dim, keepdim, dtype=dtype, out=out): "
        "the sum of the K reduced elements divided by K. keepdim=True keeps the reduced dims "
        "with size 1. `dtype` is None (float32 result) or torch.float64 (converted to float64 "
        "first, computed and returned in float64). When `out` (a tensor of the result's shape "
        "and dtype) is given, the result is written into it and returned; its final contents "
        "are judged. All five arguments are passed positionally. Cases: single, negative, "
        "non-adjacent and all dims, keepdim both ways, inputs with a non-zero mean, dtype "
        "float64, and out."
    ),
    math=r"y = \frac{1}{K}\sum_{j \in \mathrm{dims}} x_j",
    precision=(
        "float32 in; accumulate in float32 or wider, any summation order. Judged against the "
        "exact (float64) mean m: |y - m| <= 1e-5 |m| + 1e-5 ||x_slice||_2 / K. With "
        "dtype=torch.float64 the output is float64 and must be float64-accurate: 1e-10 for "
        "both coefficients."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 1023), seed=1, params={"dim": 1}),
        Case((129, 65), seed=2, dist="outlier", params={"dim": 0, "keepdim": True}),
        Case((5, 63, 33), seed=3, dist="corner", params={"dim": -2}),
        Case((7, 9, 11, 13), seed=4, params={"dim": (0, 2), "keepdim": True, "shift": 2.0}),
        Case((3, 17, 5, 129), seed=5, dist="outlier", params={"dim": (-1, 1), "out": True}),
        Case((11, 23, 31), seed=6, params={"dim": (0, 1, 2), "dtype": torch.float64}),
        Case((61, 257), seed=7, params={"dim": 1, "shift": -5.0, "out": True}),
        Case((4099, 3), seed=8, params={"dim": 0, "dtype": torch.float64, "out": True}),
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
    inplace=(4,),
)
