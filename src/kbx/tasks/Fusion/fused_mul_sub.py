"""Fusion/fused_mul_sub: input * other_mul - alpha * other_sub, with broadcasting and scalars."""

import math

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e4, -1e4, math.inf, -math.inf, math.nan)
RTOL, TERM_TOL = 1e-6, 3e-7  # relative to the result, and to the size of the two terms


def reference(input, other_mul, other_sub, alpha=1, out=None):
    y = torch.sub(torch.mul(input, other_mul), other_sub, alpha=alpha)
    if out is not None:
        out.copy_(y)
        return out
    return y


def operand(d: Draw, case: Case, kind):
    """'full' (the output's shape), 'row' (last dim), 'col' (second-to-last dim, size-1 last)
    or a Python number."""
    if kind == "full":
        return d.tensor(case.shape)
    if kind == "row":
        return d.tensor(case.shape[-1:])
    if kind == "col":
        return d.tensor((case.shape[-2], 1))
    return kind


def make_inputs(case: Case, device: str) -> Inputs:
    p = case.params
    d = Draw(case, device)
    x = d.tensor(case.shape)
    m, s = operand(d, case, p.get("mul", "full")), operand(d, case, p.get("sub", "full"))
    return Inputs((x, m, s), {"alpha": p["alpha"]} if "alpha" in p else {})


def check(inputs: Inputs, got: torch.Tensor) -> str | None:
    """Float64 value within RTOL of itself plus TERM_TOL of |x m| + |alpha s| (an FMA or the
    two-rounding form both pass); where the float32 reference is NaN or +-inf, exactly that."""
    x, m, s = inputs.args
    alpha = inputs.kwargs.get("alpha", 1)
    want32 = reference(x, m, s, alpha=alpha)
    wide = [v.double() if isinstance(v, torch.Tensor) else v for v in (x, m, s)]
    zero = torch.zeros_like(want32, dtype=torch.float64)
    a, b = wide[0] * wide[1] + zero, alpha * wide[2] + zero
    want = a - b
    g = got.to(x.device).double()
    special = ~torch.isfinite(want32)
    same = (torch.isnan(g) & torch.isnan(want32)) | (g == want32)
    close = (g - want).abs() <= RTOL * want.abs() + TERM_TOL * (a.abs() + b.abs())
    bad = torch.where(special, ~same, ~close)  # NaN in got fails `close`
    if not bad.any():
        return None
    err = torch.where(bad, (g - want).abs().nan_to_num(math.inf), 0.0)
    i = tuple(int(v) for v in torch.unravel_index(err.argmax(), g.shape))
    return (
        f"{int(bad.sum())}/{g.numel()} elements differ (|y - y64| <= {RTOL:g}|y64| + "
        f"{TERM_TOL:g}(|x m| + |alpha s|)); worst at {i}: got {g[i].item():.8g}, "
        f"expected {want32[i].item():.8g}"
    )


TASK = Task(
    entry="fused_mul_sub",
    signature="fused_mul_sub(input, other_mul, other_sub, alpha=1, out=None)",
    description=(
        "y = input * other_mul - alpha * other_sub element-wise (torch.mul then torch.sub with "
        "alpha). `input` is a contiguous float32 tensor (2-D to 4-D) that fixes the output "
        "shape; `other_mul` and `other_sub` are each a float32 tensor of the same shape, a "
        "broadcast row (the last dim only), a broadcast column (shape (size of dim -2, 1)) or "
        "a Python float; alpha is a Python number (1, 2.5, -0.5, 0 in the cases). Returns a "
        "new float32 tensor; `out` is not passed. Corner inputs include +-0, +-1e4, +-inf and "
        "NaN, which follow IEEE (inf * 0 = NaN, inf - inf = NaN, alpha = 0 times inf = NaN)."
    ),
    math=r"y = x \odot m - \alpha\, s",
    precision=(
        "float32 in and out, computed in float32 (fused multiply-add allowed). Judged against "
        f"the float64 value: |y - y64| <= {RTOL:g}|y64| + {TERM_TOL:g}(|x m| + |alpha s|), so "
        "cancellation between the two terms is allowed the rounding of the terms; NaN and "
        "+-inf must appear exactly where float32 PyTorch gives them."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 129), seed=1),
        Case((5, 33, 71), seed=2, dist="outlier", params={"mul": "row", "sub": 0.75, "alpha": 2.5}),
        Case((3, 4, 19, 23), seed=3, dist="corner", params={"mul": -1.5, "sub": "col"}),
        Case((61, 97), seed=4, dist="corner", params={"sub": "row", "alpha": -0.5}),
        Case((2, 45, 63), seed=5, params={"mul": "col", "alpha": 0}),
    ),
    bench=(
        Case((8192, 8192), seed=11, params={"alpha": 0.5}),
        Case((32, 2048, 1024), seed=12, params={"mul": "row", "sub": "col", "alpha": 2.0}),
    ),
    flops=lambda c: 3.0 * numel(c.shape),
    bytes_moved=lambda c: (
        4.0 * numel(c.shape) * (2 + sum(c.params.get(k, "full") == "full" for k in ("mul", "sub")))
    ),
    tolerance=Tolerance(rtol=RTOL, atol=0.0),
    check=check,
)
