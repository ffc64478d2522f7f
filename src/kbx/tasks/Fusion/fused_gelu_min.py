"""Fusion/fused_gelu_min: min of GELU(input), over all elements or along a dim (with indices)."""

import math

import torch
import torch.nn.functional as F

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e4, -1e4, 1e-30)  # no +-inf: PyTorch's own float32 GELU(inf) is NaN
TOL = Tolerance(rtol=1e-5, atol=3e-6)


def reference(input, approximate="none", dim=None, keepdim=False, out=None):
    g = F.gelu(input, approximate=approximate)
    if dim is None:
        return torch.min(g)
    values, indices = torch.min(g, dim=dim, keepdim=keepdim)
    return values, indices


def make_inputs(case: Case, device: str) -> Inputs:
    p = dict(case.params)
    specials = (*SPECIALS, math.nan) if p.pop("nan", False) else SPECIALS
    scale, shift = p.pop("scale", 1.0), p.pop("shift", 0.0)
    x = Draw(case, device).tensor(case.shape, specials=specials, scale=scale, shift=shift)
    return Inputs((x,), p)


def check(inputs: Inputs, got) -> str | None:
    """Values within TOL of the float64 minimum (NaN where a NaN is reduced); each index must
    point to an element whose float64 GELU is within TOL of that minimum (or to a NaN)."""
    x = inputs.args[0].double()
    kw = inputs.kwargs
    g = F.gelu(x, approximate=kw.get("approximate", "none"))
    dim, keepdim = kw.get("dim"), kw.get("keepdim", False)
    if dim is None:
        want, values = torch.min(g), got.to(x.device).double()
    else:
        want = torch.min(g, dim=dim, keepdim=True).values
        values, idx = got[0].to(x.device).double(), got[1].to(x.device)
        if not keepdim:
            values, idx = values.unsqueeze(dim), idx.unsqueeze(dim)
        if ((idx < 0) | (idx >= x.shape[dim])).any():
            return "indices out of range"
        picked = torch.gather(g, dim, idx)
        nan_ok = torch.isnan(want) & torch.isnan(picked)
        tie_ok = picked <= want + TOL.atol + TOL.rtol * want.abs()
        if not (nan_ok | tie_ok).all():
            n_bad = int((~(nan_ok | tie_ok)).sum())
            return f"{n_bad}/{idx.numel()} indices do not point to a minimum of gelu(input)"
    close = (values - want).abs() <= TOL.atol + TOL.rtol * want.abs()
    bad = ~(close | (torch.isnan(values) & torch.isnan(want)))
    if bad.any():
        i = int(torch.nonzero(bad.reshape(-1))[0])
        return (
            f"{int(bad.sum())}/{bad.numel()} minima differ from float64 (rtol={TOL.rtol:g}, "
            f"atol={TOL.atol:g}); e.g. got {values.reshape(-1)[i].item():.8g}, expected "
            f"{want.reshape(-1)[i].item():.8g}"
        )
    return None


TASK = Task(
    entry="fused_gelu_min",
    signature="fused_gelu_min(input, approximate='none', dim=None, keepdim=False, out=None)",
    description=(
        "G = gelu(input, approximate) ('none': x * Phi(x) with the exact erf; 'tanh': the tanh "
        "approximation), then torch.min(G): with dim=None the minimum of all elements as a 0-d "
        "float32 tensor; with an int `dim` (possibly negative) the tuple (values, indices) of "
        "torch.min(G, dim, keepdim): float32 minima and int64 positions along `dim` (keepdim "
        "keeps that dim with size 1). `input` is a contiguous float32 tensor (1-D to 3-D); "
        "`out` is not passed. A NaN in a reduced slice makes its minimum NaN and its index must "
        "point to a NaN. GELU is flat near its minimum (about -0.17 at x = -0.75), so several "
        "elements can tie after float32 rounding: any index whose float64 GELU is within the "
        "tolerance of the minimum is accepted. Cases: dims first, middle, last and negative, "
        "keepdim, dim=None (over inputs shifted away from GELU's flat minimum, where the "
        "result is sensitive to rounding), both GELU forms, input scales 0.5-3, signed zeros, "
        "+-1e4 and NaN."
    ),
    math=r"y = \min_{j} x_j \Phi(x_j)",
    precision=(
        "float32 in and out, GELU in float32; minima compared with the float64 minimum within "
        f"rtol={TOL.rtol:g}, atol={TOL.atol:g}; indices int64."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 129), seed=1, params={"dim": 1}),
        Case((45, 23, 7), seed=2, dist="outlier", params={"dim": 0, "approximate": "tanh"}),
        Case((9, 77, 13), seed=3, dist="corner", params={"dim": -2, "keepdim": True, "nan": True}),
        Case((1001,), seed=4, params={"scale": 0.6, "shift": 3.0}),
        Case((3, 17, 41), seed=5, dist="corner", params={"dim": 1, "approximate": "tanh"}),
        Case((5, 7, 11), seed=7, params={"approximate": "tanh", "scale": 0.5, "shift": -1.0}),
        Case((61, 30), seed=6, params={"dim": -1, "keepdim": True, "scale": 3.0}),
    ),
    bench=(
        Case((16384, 8192), seed=11, params={"dim": 1}),
        Case((8192, 16384), seed=12, params={"dim": 0, "approximate": "tanh"}),
        Case((128, 1024, 1024), seed=13),
    ),
    flops=lambda c: 10.0 * numel(c.shape),
    bytes_moved=lambda c: 4.0 * numel(c.shape),
    tolerance=TOL,
    check=check,
)
