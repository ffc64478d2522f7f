"""Fusion/fused_gather_masked_fill: torch.gather(input, dim, index).masked_fill(mask, value)."""

import math

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.moved import distinct, share
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e4, -1e4, math.inf, -math.inf, math.nan)


def reference(input, dim, index, mask, value, *, sparse_grad=False, out=None):
    y = torch.gather(input, dim, index, sparse_grad=sparse_grad).masked_fill(mask, value)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(case: Case, device: str) -> Inputs:
    """case.shape is the input's shape; params: dim, sel (index's shape), m ('full' | 'row' |
    'col': mask of the index's shape, of its last dim, or of shape (size of dim 0, 1)),
    density, value."""
    q = case.params
    d = Draw(case, device)
    dim, sel = q["dim"], q["sel"]
    if case.dtype.is_floating_point:
        x = d.tensor(case.shape, specials=SPECIALS)
    else:
        x = d.integers(case.shape, -(10**6), 10**6, dtype=case.dtype)
    index = d.integers(sel, 0, case.shape[dim])
    kind = q.get("m", "full")
    ms = {"full": sel, "row": sel[-1:], "col": (sel[0],) + (1,) * (len(sel) - 1)}[kind]
    mask = d.uniform(ms, 0, 1, dtype=torch.float64) < q.get("density", 0.3)
    return Inputs((x, dim, index, mask.to(device), q.get("value", -1.0)))


def _bytes(c: Case) -> float:
    """The input elements the unmasked positions gather (an index line of L draws from the dim's
    S values names distinct(S, L) of them; a masked position needs neither its index nor its
    input), the mask, and the output."""
    q = c.params
    sel, dim = q["sel"], q["dim"] % len(c.shape)
    ms = {"full": sel, "row": sel[-1:], "col": (sel[0],)}[q.get("m", "full")]
    kept = share(1 - q.get("density", 0.3), numel(ms))
    lines = numel(sel) // sel[dim]
    gathered = kept * distinct(c.shape[dim], sel[dim], lines)  # concave: kept * all is lower
    item = c.dtype.itemsize
    return item * gathered + 8.0 * numel(sel) * kept + numel(ms) + item * numel(sel)


TASK = Task(
    entry="fused_gather_masked_fill",
    signature=(
        "fused_gather_masked_fill(input, dim, index, mask, value, *, sparse_grad=False, out=None)"
    ),
    description=(
        "Y = torch.gather(input, dim, index), then Y[mask] = value (masked_fill). `input` is a "
        "contiguous float32 or int64 tensor (1-D to 3-D); `index` an int64 tensor with as many "
        "dims, index.size(d) <= input.size(d) for d != dim, values in [0, input.size(dim)) "
        "(repeats allowed), and Y[i][j][k] = input[index[i][j][k]][j][k] for dim=0 (and so on); "
        "`mask` a bool tensor broadcastable to index's shape (the full shape, the last dim, or "
        "a column); `value` a Python number (float: -1, 0, 2.5, inf, NaN; int for int64 input). "
        "Returns a new tensor of index's shape and input's dtype; sparse_grad only affects "
        "gradients and `out` is not passed. Cases gather along first, middle, last and "
        "negative dims with index smaller than input in other dims, and corner inputs hold "
        "+-0, +-1e4, +-inf and NaN, which must be copied bit for bit (up to the sign of zero)."
    ),
    math=r"Y_{ijk} = \mathrm{value}\ \text{if}\ M_{ijk}\ \text{else}\ X_{I_{ijk}\,jk}"
    r"\ (\text{dim} = 0)",
    precision="exact: the output's values are copies of input values or of `value`.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 129), seed=1, params={"dim": 1, "sel": (37, 200)}),
        Case(
            (23, 45, 17),
            seed=2,
            dist="corner",
            params={"dim": 0, "sel": (30, 40, 17), "m": "row", "value": math.nan},
        ),
        Case(
            (31, 77),
            seed=3,
            dist="corner",
            params={"dim": -1, "sel": (20, 50), "m": "col", "value": math.inf, "density": 0.5},
        ),
        Case(
            (9, 13, 21),
            seed=4,
            dtype=torch.int64,
            params={"dim": 1, "sel": (9, 33, 10), "value": 7},
        ),
        Case((1001,), seed=5, params={"dim": 0, "sel": (1500,), "value": 2.5, "density": 0.8}),
        Case(
            (5, 60, 11),
            seed=6,
            dist="outlier",
            params={"dim": -2, "sel": (4, 61, 11), "value": 0.0},
        ),
    ),
    bench=(
        Case((8192, 8192), seed=11, params={"dim": 1, "sel": (8192, 8192)}),
        Case((8192, 8192), seed=12, params={"dim": 0, "sel": (4096, 8192), "m": "row"}),
    ),
    flops=lambda c: 0.0,
    bytes_moved=_bytes,
    tolerance=Tolerance(rtol=0.0, atol=0.0),
)
