"""Fusion/fused_masked_select_add_gelu: gelu(masked_select(input, mask) + alpha * other)."""

import torch
import torch.nn.functional as F

from kbx.suite.inputs import Draw, numel
from kbx.suite.moved import share
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e4, -1e4, 1e-30)  # no +-inf: PyTorch's own float32 GELU(inf) is NaN


def reference(input, mask, other, *, alpha=1, approximate="none", out=None):
    z = torch.masked_select(input, mask)
    y = F.gelu(torch.add(z, other, alpha=alpha), approximate=approximate)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(case: Case, device: str) -> Inputs:
    """case.shape is the broadcast shape; params: x ('full' | 'row': input is the last dim
    only), m ('full' | 'row': mask is the last dim only), density, other ('full': one value per
    selected element | 'one': shape (1,) | a number), alpha, approximate."""
    q = case.params
    d = Draw(case, device)
    xs = case.shape if q.get("x", "full") == "full" else case.shape[-1:]
    ms = case.shape if q.get("m", "full") == "full" else case.shape[-1:]
    x = d.tensor(xs, specials=SPECIALS)
    mask = d.uniform(ms, 0, 1, dtype=torch.float64) < q.get("density", 0.5)
    k = int(mask.expand(case.shape).sum())
    kind = q.get("other", "full")
    if kind == "full":
        other = d.tensor((k,), dist="normal")
    elif kind == "one":
        other = d.tensor((1,), dist="normal")
    else:
        other = kind
    kw = {a: q[a] for a in ("alpha", "approximate") if a in q}
    return Inputs((x, mask.to(device), other), kw)


def _bytes(c: Case) -> float:
    """The input elements the mask selects, the mask, `other` per selected element (or one), and
    the output; the selected share comes from the mask's own elements (it may be a row)."""
    q = c.params
    xs = c.shape if q.get("x", "full") == "full" else c.shape[-1:]
    ms = c.shape if q.get("m", "full") == "full" else c.shape[-1:]
    kept = share(q.get("density", 0.5), numel(ms))
    selected = kept * numel(c.shape)
    other = {"full": selected, "one": 1}.get(q.get("other", "full"), 0)
    return 4.0 * (numel(xs) * kept + other + selected) + numel(ms)


TASK = Task(
    entry="fused_masked_select_add_gelu",
    signature=(
        "fused_masked_select_add_gelu(input, mask, other, *, alpha=1, approximate='none', out=None)"
    ),
    description=(
        "Z = torch.masked_select(input, mask): the elements of `input` (float32) where the "
        "bool `mask` is True, both broadcast to a common shape, taken in row-major order of "
        "that shape, as a 1-D tensor of length K = number of Trues. Then S = Z + alpha * other "
        "with `other` a float32 (K,) tensor, a (1,) tensor or a Python number, and y = "
        "gelu(S, approximate) ('none': exact erf; 'tanh': the tanh approximation). Returns a "
        "new float32 (K,) tensor; `out` is not passed. Cases: mask and input of the same shape "
        "(2-D to 4-D), a mask broadcast from the last dim, an input broadcast from the last "
        "dim, densities 0.02-0.95, alpha in {1, 2.5, -1}, both GELU forms and corner inputs "
        "(signed zeros, +-1e4)."
    ),
    math=r"y = \mathrm{GELU}(x_{[m]} + \alpha\, o)",
    precision="float32 in and out, computed in float32; rtol=1e-5, atol=3e-6.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 129), seed=1),
        Case((5, 33, 71), seed=2, dist="outlier", params={"m": "row", "other": 0.5, "alpha": 2.5}),
        Case(
            (3, 4, 19, 23),
            seed=3,
            dist="corner",
            params={"density": 0.9, "other": "one", "approximate": "tanh"},
        ),
        Case((61, 97), seed=4, params={"x": "row", "density": 0.2, "alpha": -1}),
        Case((2, 45, 63), seed=5, dist="corner", params={"density": 0.02, "approximate": "tanh"}),
        Case((4001,), seed=6, params={"density": 0.95, "other": -0.25}),
    ),
    bench=(
        Case((8192, 8192), seed=11),
        Case((64, 1024, 1024), seed=12, params={"density": 0.25, "other": 1.0, "alpha": 0.5}),
    ),
    flops=lambda c: 10.0 * numel(c.shape) * c.params.get("density", 0.5),
    bytes_moved=_bytes,
    tolerance=Tolerance(rtol=1e-5, atol=3e-6),
)
