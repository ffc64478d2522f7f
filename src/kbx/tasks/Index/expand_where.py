"""Index/expand_where: broadcast `input` to target_sizes, then pick it or `other` where `cond`."""

import torch

from kbx.suite.cases import table
from kbx.suite.inputs import Draw, numel
from kbx.suite.moved import share
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e30, -1e30, float("inf"), float("-inf"), float("nan"))


def reference(input, target_sizes, cond, other):
    return torch.where(cond, input.expand(*target_sizes), other)


def make_inputs(case: Case, device: str) -> Inputs:
    p = case.params
    draw = Draw(case, device)
    x = draw.tensor(p["input"], specials=SPECIALS)
    other = draw.tensor(p["other"], specials=SPECIALS)
    cond = draw.uniform(p["cond"], 0.0, 1.0, dtype=torch.float64) < p.get("p_true", 0.5)
    return Inputs((x, tuple(p["target"]), cond, other))


_case = table("input", "target", "cond", "other")  # shapes: input, target sizes, cond, other


def _bytes(c: Case) -> float:
    """The output, cond, and of `input` and `other` the elements some position picks: where
    cond is False `input` is not read, where it is True `other` is not (cond may be a column:
    whole rows of `other` go unread)."""
    p = c.params
    true = p.get("p_true", 0.5)
    picked = share(true, numel(p["cond"])), share(1 - true, numel(p["cond"]))
    read = numel(p["input"]) * picked[0] + numel(p["other"]) * picked[1]
    return 4.0 * (numel(c.shape) + read) + numel(p["cond"])


TASK = Task(
    entry="expand_where",
    signature="expand_where(input, target_sizes, cond, other)",
    description=(
        "Broadcast the float32 tensor `input` to `target_sizes` (a tuple of ints, as "
        "Tensor.expand: size-1 dims are repeated, -1 keeps a dim, extra leading dims may be "
        "added) and return torch.where(cond, expanded, other): a new float32 tensor of the "
        "broadcast shape holding the expanded input where the bool tensor `cond` is True and "
        "`other` (float32) elsewhere. `cond` and `other` broadcast against the target shape and "
        "are no larger than it. Cases use 1-D to 4-D targets with -1 entries, inputs with fewer "
        "dims than the target, and size-1 dims in cond and other; values (inf and NaN included) "
        "are copied bit-exactly."
    ),
    math=r"\mathrm{out} = \mathrm{cond}\ ?\ \mathrm{expand}(x)\ :\ \mathrm{other}",
    precision="float32 data, bool condition, float32 out; a pure selection, judged exactly.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        _case((37, 1023), 1, (1, 1023), (37, 1023), (37, 1), (37, 1023)),
        _case((129, 65), 2, (129, 1), (-1, 65), (129, 65), (1, 65), "outlier", p_true=0.3),
        _case((5, 63, 33), 3, (63, 1), (5, 63, 33), (5, 1, 33), (5, 63, 33), "corner"),
        _case((7, 9, 11, 13), 4, (7, 1, 11, 1), (7, 9, -1, 13), (9, 1, 13), (1, 9, 11, 13)),
        _case((4099,), 5, (1,), (4099,), (4099,), (4099,), "corner", p_true=0.7),
    ),
    bench=(
        _case((8192, 8192), 11, (1, 8192), (8192, 8192), (8192, 1), (8192, 8192)),
        _case((64, 1024, 1024), 12, (64, 1, 1024), (64, 1024, 1024), (64, 1024, 1), (1024, 1024)),
    ),
    flops=lambda c: 0.0,
    bytes_moved=_bytes,
    tolerance=Tolerance(rtol=0.0, atol=0.0),
)
