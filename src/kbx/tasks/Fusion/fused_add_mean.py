"""Fusion/fused_add_mean: mean of input + alpha * other over dims (or all), with broadcasting."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

RTOL, NTOL = 1e-5, 1e-5  # see check(); 1e-10 each with dtype=torch.float64


def reference(input, other, dim=None, alpha=1, keepdim=False, dtype=None, out=None):
    y = torch.mean(torch.add(input, other, alpha=alpha), dim=dim, keepdim=keepdim, dtype=dtype)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(case: Case, device: str) -> Inputs:
    """params: other = 'full' | a shape (tuple) | a float; shift moves the input's mean."""
    p = dict(case.params)
    d = Draw(case, device)
    x = d.tensor(case.shape, shift=p.pop("shift", 0.0))
    kind = p.pop("other", "full")
    shape = case.shape if kind == "full" else kind
    other = kind if isinstance(kind, float) else d.tensor(shape)
    if p.get("dtype") == torch.float64:  # multiples of 2^-10: every float32 sum is exact
        x = torch.round(x * 1024) / 1024
        other = torch.round(other * 1024) / 1024 if isinstance(other, torch.Tensor) else other
    return Inputs((x, other), p)


def check(inputs: Inputs, out) -> str | None:
    """|y - m| <= RTOL |m| + NTOL ||z_slice||_2 / K, with m the exact (float64) mean of the K
    values z = input + alpha * other averaged into y. A float32 sum in any reasonable order stays
    far inside; inputs rounded to half precision (~1e-4 ||z|| / K) do not. With
    dtype=torch.float64 the inputs are multiples of 2^-10, so z is exact in float32 and the
    float64 mean must be accurate to 1e-10: a float32 accumulator fails."""
    x, other = inputs.args
    kw = inputs.kwargs
    f64 = kw.get("dtype") == torch.float64
    rtol, ntol = (1e-10, 1e-10) if f64 else (RTOL, NTOL)
    o = other.double() if isinstance(other, torch.Tensor) else other
    z = x.double() + kw.get("alpha", 1) * o
    dim, keep = kw.get("dim"), kw.get("keepdim", False)
    want = torch.mean(z, dim=dim, keepdim=keep).cpu()
    k = z.numel() / max(want.numel(), 1)
    norm = (torch.sum(z * z, dim=dim, keepdim=keep).sqrt() / k).cpu()
    err = (out.double() - want).abs()
    bound = rtol * want.abs() + ntol * norm
    bad = ~(err <= bound)  # NaN fails
    if bad.any():
        i = int(torch.argmax(torch.where(bad, err / bound, 0.0).reshape(-1).nan_to_num(1e300)))
        return (
            f"{int(bad.sum())}/{bad.numel()} means off by more than {rtol:g}*|mean| + "
            f"{ntol:g}*||slice||_2/K; worst: got {out.reshape(-1)[i].item():.9g}, exact "
            f"{want.reshape(-1)[i].item():.9g}"
        )
    return None


def bytes_moved(c: Case) -> float:
    other = c.params.get("other", "full")
    n_other = numel(c.shape) if other == "full" else 0 if isinstance(other, float) else numel(other)
    return 4.0 * (numel(c.shape) + n_other)


TASK = Task(
    entry="fused_add_mean",
    signature=(
        "fused_add_mean(input, other, dim=None, alpha=1, keepdim=False, dtype=None, out=None)"
    ),
    description=(
        "Mean of a scaled sum: torch.mean(torch.add(input, other, alpha=alpha), dim, keepdim, "
        "dtype). `input` is a contiguous float32 tensor (1-D to 4-D); `other` is a float32 tensor "
        "broadcastable to it (same shape, or fewer/size-1 dims) or a Python float; `alpha` an int "
        "or float. `dim` is None (mean of all elements, a 0-d result), an int (possibly negative) "
        "or a tuple of ints; keepdim=True keeps reduced dims with size 1. dtype=None gives a "
        "float32 result; dtype=torch.float64 gives a float64 result averaged in float64 (the sum "
        "input + alpha * other itself is formed in float32, as torch does; in that case the "
        "inputs are multiples of 2^-10, so it is exact). Cases cover full, broadcast and scalar "
        "`other`, alpha in {1, -0.5, 2, 3}, single, negative and tuple dims, dim=None and "
        "keepdim both ways. `out` is not passed."
    ),
    math=r"y = \frac{1}{K}\sum_{j \in S}\left(x_j + \alpha\,o_j\right)",
    precision=(
        "float32 in; sums in float32 or wider, any order. Judged against the exact float64 mean "
        "m of the K averaged values z: |y - m| <= 1e-5 |m| + 1e-5 ||z||_2 / K. With "
        "dtype=torch.float64 the output is float64 and the same bound uses 1e-10."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((37, 1023), seed=1, params={"dim": 1}),
        Case(
            (129, 65),
            seed=2,
            dist="outlier",
            params={"other": (65,), "dim": 0, "keepdim": True, "alpha": -0.5},
        ),
        Case((5, 63, 33), seed=3, dist="corner", params={"dim": -2}),
        Case(
            (7, 9, 11, 13),
            seed=4,
            params={"other": (11, 1), "dim": (0, 2), "keepdim": True, "alpha": 2},
        ),
        Case(
            (3, 17, 5, 129),
            seed=5,
            dist="outlier",
            params={"other": 0.75, "dim": (-1, 1), "alpha": 3},
        ),
        Case((11, 23, 31), seed=6, params={"dtype": torch.float64, "shift": 0.5}),
        Case((1001, 3), seed=7, params={"other": (3,), "shift": 0.25}),
        Case((19, 41), seed=8, params={"dim": 1, "dtype": torch.float64, "keepdim": True}),
    ),
    bench=(
        Case((8192, 8192), seed=11, params={"dim": -1}),
        Case((4096, 16384), seed=12, params={"other": (16384,), "shift": 0.5}),
        Case((64, 4096, 256), seed=13, params={"dim": 1}),
    ),
    flops=lambda c: 3.0 * numel(c.shape),
    bytes_moved=bytes_moved,
    tolerance=Tolerance(rtol=RTOL, atol=0.0),  # unused: check() judges the values
    check=check,
)
