"""Fusion/fused_repeat_interleave_log_softmax: log_softmax(repeat_interleave(x, repeats, dim))."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e4, -1e4, 1e-30, float("-inf"))  # -inf: a log-probability of -inf


def reference(input, repeats, dim=None, *, output_size=None, dtype=None, out=None):
    y = torch.repeat_interleave(input, repeats, dim=dim, output_size=output_size)
    y = torch.nn.functional.log_softmax(y, dim=0 if dim is None else dim, dtype=dtype)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(case: Case, device: str) -> Inputs:
    """params: repeats (an int, or 'tensor': per-element counts in [0, 3], one of them forced
    to 0), dim, sized (pass output_size), dtype."""
    p = dict(case.params)
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=SPECIALS)
    dim = p.get("dim")
    reps = p.pop("repeats")
    if reps == "tensor":
        n = numel(case.shape) if dim is None else case.shape[dim]
        reps = d.integers((n,), 0, 4)
        reps[n // 2] = 0  # an element that vanishes from the output
    if p.pop("sized", False):
        along = numel(case.shape) if dim is None else case.shape[dim]
        p["output_size"] = int(reps.sum()) if isinstance(reps, torch.Tensor) else along * reps
    if "dtype" in p:
        p["dtype"] = getattr(torch, p["dtype"])
    return Inputs((x, reps), p)


def out_numel(c: Case) -> float:
    r = c.params["repeats"]
    return numel(c.shape) * (1.5 if r == "tensor" else r)  # counts average 1.5


def out_itemsize(c: Case) -> float:
    return 8.0 if c.params.get("dtype") == "float64" else 4.0


TASK = Task(
    entry="fused_repeat_interleave_log_softmax",
    signature=(
        "fused_repeat_interleave_log_softmax(input, repeats, dim=None, *, output_size=None, "
        "dtype=None, out=None)"
    ),
    description=(
        "Repeat each element along `dim` and take log-softmax along the same dim: "
        "y = log_softmax(repeat_interleave(input, repeats, dim), dim, dtype). `input` is a "
        "contiguous float32 tensor (1-D to 3-D). `repeats` is a Python int (every element "
        "repeated that often) or a 1-D int64 tensor on the input's device with one count "
        "(>= 0) per position along `dim`; a count of 0 removes that element, including from "
        "the normalising sum. dim=None flattens the input first (then the log-softmax runs over "
        "the flattened, repeated 1-D tensor). `output_size`, when given, is the total length "
        "along dim (sum of the counts) and may be trusted. `dtype` None or torch.float64: the "
        "repeated values are cast to it before the log-softmax and the result has that dtype. "
        "Returns a new tensor. Log-softmax semantics follow torch: a -inf input gives -inf, "
        "a line of all -inf is NaN. Cases: int and tensor repeats (with zeros), dim None, "
        "0, 1 and -1, output_size, dtype=torch.float64, corner values (+-1e4, -inf, signed "
        "zeros); `out` is accepted but not exercised."
    ),
    math=r"y_k = x_{j(k)} - \log \sum_j r_j\, e^{x_j},\quad j(k): \text{source of position } k",
    precision=(
        "float32 in and out (float64 with dtype=torch.float64), computed in float32 or wider "
        "with the max-subtracted log-sum-exp; rtol=1e-5, atol=1e-5 (outputs are O(10) "
        "log-probabilities)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 29), seed=1, params={"repeats": 3, "dim": 1}),
        Case((41,), seed=2, dist="outlier", params={"repeats": "tensor", "dim": 0, "sized": True}),
        Case((5, 7, 9), seed=3, dist="corner", params={"repeats": 2}),
        Case((6, 13, 11), seed=4, params={"repeats": "tensor", "dim": 1, "dtype": "float64"}),
        Case((3, 17, 5), seed=5, dist="corner", params={"repeats": 4, "dim": 0}),
        Case((9, 301), seed=6, dist="outlier", params={"repeats": "tensor", "dim": -1}),
    ),
    bench=(
        Case((8192, 4096), seed=11, params={"repeats": 2, "dim": 1}),
        Case((16384, 2048), seed=12, params={"repeats": "tensor", "dim": 1, "sized": True}),
    ),
    flops=lambda c: 4.0 * numel(c.shape) + out_numel(c),
    bytes_moved=lambda c: 4.0 * numel(c.shape) + out_itemsize(c) * out_numel(c),
    tolerance=Tolerance(rtol=1e-5, atol=1e-5),
)
