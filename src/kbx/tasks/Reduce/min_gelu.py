"""Reduce/min_gelu: GELU of a tensor, then its minimum overall or (values, indices) along a dim."""

import torch

from kbx.suite.bounds import close
from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# +-inf left out: torch's CPU GELU gives NaN for +inf, its CUDA GELU +inf
SPECIALS = (0.0, -0.0, 1e4, -1e4, 1e30, -1e30, float("nan"))
RTOL, ATOL = 1e-5, 1e-6


def reference(input, dim=None, keepdim=False, approximate="none", out=None):
    g = torch.nn.functional.gelu(input, approximate=approximate)
    if dim is None:
        result = torch.min(g)
        return result if out is None else out.copy_(result)
    return torch.min(g, dim, keepdim=keepdim, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(case.shape, specials=SPECIALS)
    return Inputs((x,), dict(case.params))


def check(inputs: Inputs, out) -> str | None:
    """Values within tolerance of the reference minimum; an index is accepted when the reference
    GELU at it equals the minimum within the same tolerance (near the GELU's flat minimum, one
    ulp decides between elements, so the first-occurrence rule cannot be enforced exactly)."""
    (x,), kw = inputs.args, inputs.kwargs
    dim, keepdim, approx = kw.get("dim"), kw.get("keepdim", False), kw.get("approximate", "none")
    g = torch.nn.functional.gelu(x.cpu(), approximate=approx).double()
    if dim is None:
        want = g.min()  # NaN if any element is NaN
        return (
            None
            if bool(close(out.double(), want, RTOL, ATOL))
            else (f"minimum {out.item():.9g}, expected {want.item():.9g}")
        )
    values, indices = out
    want = torch.min(g, dim, keepdim=True).values
    want = want if keepdim else want.squeeze(dim)
    bad = ~close(values.double(), want, RTOL, ATOL)
    if bad.any():
        return f"{int(bad.sum())}/{bad.numel()} minima outside rtol={RTOL:g} atol={ATOL:g}"
    idx = indices if keepdim else indices.unsqueeze(dim)
    if bool(((idx < 0) | (idx >= x.shape[dim])).any()):
        return "indices out of range"
    at = torch.gather(g, dim, idx)
    bad = ~close(at, want if keepdim else want.unsqueeze(dim), RTOL, ATOL)
    if bad.any():
        return f"{int(bad.sum())} indices point at elements whose GELU is not the minimum"
    return None


TASK = Task(
    entry="min_gelu",
    signature=(
        "min_gelu(input: Tensor, dim=None, keepdim=False, approximate='none', out=None) -> Tensor"
    ),
    description=(
        "Apply GELU to the float32 tensor `input` (approximate='none': x * Phi(x) with the "
        "erf form; 'tanh': 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))), then take the minimum. "
        "dim=None: return the 0-d float32 minimum over all elements (keepdim ignored). dim an "
        "int: return (values, indices) like torch.min(gelu, dim, keepdim) - float32 minima and "
        "int64 positions along `dim`, with `dim` removed or kept as size 1. NaN propagates (a "
        "slice with NaN has minimum NaN, index of a NaN). Indices are accepted where the GELU "
        "at them equals the minimum within tolerance (torch returns the first such position). "
        "`out` is not exercised. Cases: dim None and 0/1/-1/2, keepdim both ways, both GELU "
        "forms, corner values (NaN, +-1e30, +-1e4, signed zeros)."
    ),
    math=r"\min_k \mathrm{GELU}(x_k),\ \mathrm{GELU}(x) = x\,\Phi(x)",
    precision=(
        "float32 in and out, GELU in float32; values within rtol=1e-5, atol=1e-6 of the "
        "reference minimum; int64 indices judged as described."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 1023), seed=1, params={"dim": 1}),
        Case((129, 65), seed=2, dist="outlier", params={"dim": 0, "keepdim": True}),
        Case((5, 63, 33), seed=3, dist="corner", params={"dim": -1, "approximate": "tanh"}),
        Case((4099,), seed=4, params={}),
        Case((7, 9, 11, 13), seed=5, dist="outlier", params={"approximate": "tanh"}),
        Case((3, 17, 5, 129), seed=6, dist="corner", params={"dim": 2, "keepdim": True}),
        Case((61, 257), seed=7, dist="corner", params={"dim": 1, "approximate": "tanh"}),
    ),
    bench=(
        Case((8192, 16384), seed=11, params={"dim": 1}),
        Case((1 << 27,), seed=12, params={"approximate": "tanh"}),
    ),
    flops=lambda c: 20.0 * numel(c.shape),
    bytes_moved=lambda c: 4.0 * numel(c.shape),
    tolerance=Tolerance(rtol=RTOL, atol=ATOL),  # used through check()
    check=check,
)
