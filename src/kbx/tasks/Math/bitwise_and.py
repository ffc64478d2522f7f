"""Math/bitwise_and: element-wise AND of integer or boolean tensors, with broadcasting and `out`."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(input, other, out=None):
    return torch.bitwise_and(input, other, out=out)


def draw_bits(draw: Draw, shape, dtype: torch.dtype) -> torch.Tensor:
    if dtype == torch.bool:
        return draw.integers(shape, 0, 2, dtype=torch.bool)
    info = torch.iinfo(dtype)
    return draw.integers(shape, info.min, info.max, dtype=dtype)  # the whole range


def make_inputs(case: Case, device: str) -> Inputs:
    """case.shape is the output shape; params y (broadcastable shape) or scalar describe `other`."""
    p = case.params
    draw = Draw(case, device)
    x = draw_bits(draw, p.get("x", case.shape), case.dtype)
    y = p["scalar"] if "scalar" in p else draw_bits(draw, p.get("y", case.shape), case.dtype)
    out = torch.zeros(case.shape, dtype=case.dtype, device=device) if p.get("out") else None
    return Inputs((x, y, out))


def nbytes(c: Case) -> float:
    y = 0 if "scalar" in c.params else numel(c.params.get("y", c.shape))
    return float(c.dtype.itemsize * (numel(c.params.get("x", c.shape)) + y + numel(c.shape)))


TASK = Task(
    entry="bitwise_and",
    signature="bitwise_and(input, other, out=None)",
    description=(
        "Return the bitwise AND of `input` and `other` (like torch.bitwise_and): both integer "
        "tensors of one dtype (int8, uint8, int16, int32, int64) or both bool (logical AND), "
        "broadcast against each other; `other` may also be a Python int. The result has the "
        "broadcast shape and the inputs' dtype. If `out` is given, write into it and return it. "
        "Cases draw values over each dtype's whole range (negative values included): same "
        "shapes, a row broadcast, a two-sided broadcast, a Python-int `other`, a bool case and "
        "a case passing `out`."
    ),
    math=r"\mathrm{out}_i = \mathrm{input}_i \mathbin{\&} \mathrm{other}_i",
    precision="Integer or bool in and out; exact.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, dtype=torch.int32),
        Case((37, 1023), seed=2, dtype=torch.int64, params={"y": (1023,)}),
        Case((3, 129, 65), seed=3, dtype=torch.int8, params={"x": (3, 1, 65), "y": (129, 1)}),
        Case((2047, 5), seed=4, dtype=torch.bool),
        Case((5, 7, 301), seed=5, dtype=torch.uint8, params={"out": True}),
        Case((611, 13), seed=6, dtype=torch.int16, params={"scalar": 0x5A5A}),
    ),
    bench=(
        Case((1 << 26,), seed=11, dtype=torch.int32),
        Case((8192, 8192), seed=12, dtype=torch.int64, params={"y": (8192,)}),
    ),
    flops=lambda c: 0.0,
    bytes_moved=nbytes,
    tolerance=Tolerance(rtol=0.0, atol=0.0),
    inplace=(2,),
)
