"""Index/masked_select: the elements of `input` where a broadcast bool `mask` is True, as 1-D."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.moved import share
from kbx.suite.task import Case, Inputs, Task, Tolerance

SPECIALS = (0.0, -0.0, 1e30, -1e30, float("inf"), float("-inf"), float("nan"))


def reference(input: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.masked_select(input, mask)


def make_inputs(case: Case, device: str) -> Inputs:
    p = case.params
    draw = Draw(case, device)
    x = draw.tensor(p.get("input", case.shape), specials=SPECIALS)
    mask_shape = p.get("mask", case.shape)
    mask = draw.uniform(mask_shape, 0.0, 1.0, dtype=torch.float64) < p["density"]
    return Inputs((x, mask))


def _bytes(c: Case) -> float:
    """The mask, the input elements it selects (an input element broadcast to several positions
    is read if any is selected), and the selected elements written."""
    p = c.params
    mask = numel(p.get("mask", c.shape))
    kept = share(p["density"], mask)
    return mask + 4.0 * kept * (numel(p.get("input", c.shape)) + numel(c.shape))


TASK = Task(
    entry="masked_select",
    signature="masked_select(input: torch.Tensor, mask: torch.Tensor) -> torch.Tensor",
    description=(
        "Stream compaction, like torch.masked_select: broadcast the float32 tensor `input` and "
        "the bool tensor `mask` to a common shape and return a new 1-D float32 tensor with the "
        "elements of the broadcast input at the True positions of the broadcast mask, in "
        "row-major order. Its length (the number of True values) depends on the data, so the "
        "kernel must count before it writes. Cases: 1-D to 4-D, mask densities from 2% to 97%, "
        "a mask broadcast along rows, an input broadcast against a larger mask; values (inf, "
        "NaN, signed zeros) are copied bit-exactly and the order must be kept."
    ),
    math=r"\mathrm{out} = (x_i \mid m_i)_{i\ \text{in row-major order}}",
    precision="float32 data, bool mask, float32 out; judged exactly (length, order, values).",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((100003,), seed=1, params={"density": 0.5}),
        Case((129, 65), seed=2, dist="outlier", params={"density": 0.02}),
        Case((5, 63, 33), seed=3, dist="corner", params={"density": 0.97}),
        Case((37, 1023), seed=4, params={"density": 0.4, "mask": (1, 1023)}),
        Case((7, 9, 11, 13), seed=5, params={"density": 0.6, "input": (9, 1, 13)}),
    ),
    bench=(
        Case((1 << 26,), seed=11, params={"density": 0.5}),
        Case((8192, 8192), seed=12, params={"density": 0.1}),
    ),
    flops=lambda c: 0.0,
    # read input and mask, write the selected fraction
    bytes_moved=_bytes,
    tolerance=Tolerance(rtol=0.0, atol=0.0),
)
