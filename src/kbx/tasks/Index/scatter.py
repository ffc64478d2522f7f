"""Index/scatter: out-of-place scatter of `src` into a copy of `input` along `dim`."""

import torch

from kbx.suite.cases import table
from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(input: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor):
    return torch.scatter(input, dim, index, src)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    dim, idx_shape = case.params["dim"], case.params["index"]
    x = draw.tensor(case.shape)
    src = draw.tensor(case.params["src"])
    index = draw.integers(idx_shape, 0, case.shape[dim])  # random, so targets repeat
    return Inputs((x, dim, index, src))


def same(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a == b) | (torch.isnan(a) & torch.isnan(b))


def check(inputs: Inputs, out: torch.Tensor) -> str | None:
    """Order-independent: untouched positions keep `input`, written ones hold one of their src."""
    x, dim, index, src = (a.cpu() if isinstance(a, torch.Tensor) else a for a in inputs.args)
    dim = dim % x.dim()
    # Flat target of every index position: its own coordinates, with `dim` replaced by the index.
    coords = torch.meshgrid(*(torch.arange(s) for s in index.shape), indexing="ij")
    target = torch.zeros(index.shape, dtype=torch.int64)
    for d, stride in enumerate(x.contiguous().stride()):
        target += (index if d == dim else coords[d]) * stride
    target = target.flatten()
    vals = src[tuple(slice(0, s) for s in index.shape)].flatten()
    flat_out, flat_x = out.flatten(), x.flatten()
    hit = same(flat_out[target], vals).to(torch.int32)
    written = torch.zeros(flat_x.numel(), dtype=torch.int32).index_fill_(0, target, 1)
    matched = torch.zeros_like(written).scatter_reduce_(0, target, hit, "amax")
    bad_write = (written == 1) & (matched == 0)
    if bad_write.any():
        i = int(bad_write.nonzero()[0])
        return (
            f"{int(bad_write.sum())} written positions hold no src value scattered to them "
            f"(first at flat index {i}: got {flat_out[i].item():.6g})"
        )
    kept = (written == 0) & ~same(flat_out, flat_x)
    if kept.any():
        i = int(kept.nonzero()[0])
        return (
            f"{int(kept.sum())} positions no index writes differ from `input` (first at "
            f"flat index {i}: got {flat_out[i].item():.6g}, input {flat_x[i].item():.6g})"
        )
    return None


_case = table("dim", "index", "src")  # index, src: shapes


TASK = Task(
    entry="scatter",
    signature="scatter(input, dim, index, src) -> torch.Tensor",
    description=(
        "Out-of-place scatter (torch.Tensor.scatter): return a copy of float32 `input` in which, "
        "for every position p of the int64 tensor `index`, the element at p with coordinate `dim` "
        "replaced by index[p] is set to src[p]. `index` has the same number of dimensions as "
        "`input` and `src`, is no larger than `src` in any dimension and no larger than `input` "
        "in every dimension other than `dim`; only the leading index.shape block of `src` is "
        "used. Cases are 2-D and 3-D with dim 0, 1 and -1. Indices repeat, and where several src "
        "values go to the same position any one of them is accepted; `input` must not change."
    ),
    math=r"\mathrm{out}[\ldots, \mathrm{index}[p], \ldots] = \mathrm{src}[p]\ \text{(along dim)}",
    precision="float32 data and int64 indices in, float32 out; values are copied bit-exactly.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        _case((37, 65), 1, 0, (53, 61), (60, 65)),
        _case((129, 33), 2, 1, (100, 47), (129, 50), dist="outlier"),
        _case((5, 31, 17), 3, -1, (4, 29, 40), (5, 31, 41), dist="corner"),
        _case((9, 23, 19), 4, 0, (21, 17, 19), (23, 20, 19)),
        _case((7, 13, 45), 5, 1, (6, 37, 11), (7, 40, 13), dist="outlier"),
    ),
    bench=(
        _case((8192, 8192), 11, 0, (4096, 8192), (4096, 8192)),
        _case((64, 1024, 1024), 12, -1, (64, 1024, 512), (64, 1024, 512)),
    ),
    flops=lambda c: 0.0,
    # copy input (read + write), read index (int64) and src, write one float per index element
    bytes_moved=lambda c: 8.0 * numel(c.shape) + 8.0 * numel(c.params["index"]),
    tolerance=Tolerance(rtol=0.0, atol=0.0),
    check=check,
)
