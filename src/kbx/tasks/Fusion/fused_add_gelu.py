"""Fusion/fused_add_gelu: GELU(input + alpha * other) with broadcasting, exact or tanh GELU."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(input, other, alpha=1, approximate="none", out=None):
    y = torch.nn.functional.gelu(torch.add(input, other, alpha=alpha), approximate=approximate)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(case: Case, device: str) -> Inputs:
    """params: other = 'full' (same shape), 'row' (last dim only), 'col' (size-1 last dim) or
    a Python float; alpha and approximate are passed through."""
    p = dict(case.params)
    d = Draw(case, device)
    x = d.tensor(case.shape)
    kind = p.pop("other", "full")
    if kind == "full":
        other = d.tensor(case.shape)
    elif kind == "row":
        other = d.tensor(case.shape[-1:])
    elif kind == "col":
        other = d.tensor((*case.shape[:-1], 1))
    else:
        other = float(kind)
    return Inputs((x, other), p)


def bytes_moved(c: Case) -> float:
    kind = c.params.get("other", "full")
    return 4.0 * numel(c.shape) * (3 if kind == "full" else 2)


TASK = Task(
    entry="fused_add_gelu",
    signature="fused_add_gelu(input, other, alpha=1, approximate='none', out=None)",
    description=(
        "Element-wise GELU of a scaled sum: out = gelu(input + alpha * other). `input` is a "
        "contiguous float32 tensor (1-D to 3-D); `other` is a float32 tensor broadcastable to it "
        "(same shape, a row of the last dim's size, or a column with a size-1 last dim) or a "
        "Python float; `alpha` a Python int or float. approximate='none' is the exact "
        "x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))); 'tanh' is "
        "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Returns a new float32 tensor of the "
        "input's shape. Cases cover all three tensor layouts of `other`, a scalar `other`, "
        "alpha in {1, -0.5, 2.5, 3} and both GELU forms; `out` is accepted but not exercised."
    ),
    math=r"y = \mathrm{GELU}(x + \alpha\,o)",
    precision=(
        "float32 in and out, computed in float32; rtol=1e-5, atol=3e-6 (in the negative tail "
        "1 + erf(x / sqrt(2)) cancels: float32 GELUs, PyTorch's own included, carry absolute "
        "errors up to ~7e-7 there)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier", params={"other": "row", "alpha": -0.5}),
        Case((3, 129, 65), seed=3, dist="corner", params={"approximate": "tanh", "alpha": 2.5}),
        Case((61, 257), seed=4, params={"other": "col", "approximate": "tanh"}),
        Case((5, 7, 301), seed=5, dist="outlier", params={"other": "0.75", "alpha": 3}),
    ),
    bench=(
        Case((8192, 8192), seed=11),
        Case((16384, 8192), seed=12, params={"other": "row", "approximate": "tanh"}),
    ),
    flops=lambda c: 14.0 * numel(c.shape),
    bytes_moved=bytes_moved,
    tolerance=Tolerance(rtol=1e-5, atol=3e-6),
)
