"""Math/signbit: whether each element's sign bit is set (true for -0.0 and negative NaN)."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Zero, NaN, inf, a huge value and subnormals; corner cases flip sign bits at random, which
# gives -0.0, -inf and NaNs with the sign bit set.
SPECIALS = (0.0, float("nan"), float("inf"), 1e30, 1e-40, 1e-6)
BITS = {
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
    torch.float32: torch.int32,
    torch.float64: torch.int64,
}


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.signbit(input, out=out)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)  # benchmark sizes drawn on the GPU (``Draw``)
    if case.dtype == torch.int32:
        x = draw.integers(case.shape, -(2**31), 2**31 - 1, dtype=torch.int32)
    else:
        x = draw.tensor(case.shape, specials=SPECIALS)
        if case.dist == "corner":  # flip the sign bit of a random half, NaNs included
            ity = BITS[case.dtype]
            flip = draw.integers(case.shape, 0, 2, dtype=ity) * torch.iinfo(ity).min
            x = (x.view(ity) ^ flip).view(case.dtype)
        if case.dtype == torch.float16:  # torch's CUDA kernel drops a float16 NaN's sign
            x = torch.where(x.isnan(), (x.view(torch.int16) & 0x7FFF).view(x.dtype), x)
    # `out` travels as a positional argument so that its final contents are judged too.
    out = (
        torch.zeros(x.shape, dtype=torch.bool, device=x.device) if case.params.get("out") else None
    )
    return Inputs((x, out))


TASK = Task(
    entry="signbit",
    signature="signbit(input: torch.Tensor, out: torch.Tensor=None) -> torch.Tensor",
    description=(
        "Return a bool tensor of the shape of `input` that is True where the element's sign "
        "bit is set, as torch.signbit: True for negative numbers, -0.0, -inf and NaNs whose "
        "sign bit is set, False for +0.0 and positive NaNs (so `x < 0` is not enough). For an "
        "integer tensor it is x < 0. If `out` (a bool tensor of the same shape) is given, "
        "write the result into it and return it. Cases: float32 (normal, outlier and corner "
        "values: +-0, NaN of both signs, +-inf, +-1e30, subnormals +-1e-40), float16, "
        "bfloat16 and float64 corner values, and int32; one case passes `out`. Float16 NaNs "
        "are all positive: torch's CUDA signbit converts float16 to float32 first, which "
        "drops a NaN's sign, while its CPU kernel keeps it."
    ),
    math=r"y_i = [\text{sign bit of } x_i = 1]",
    precision="Bool output, exact.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier"),
        Case((3, 129, 65), seed=3, dist="corner"),
        Case((2047, 5), seed=4, dist="corner", params={"out": True}),
        Case((257, 31), seed=5, dtype=torch.float16, dist="corner"),
        Case((129, 17), seed=6, dtype=torch.bfloat16, dist="corner"),
        Case((1001,), seed=7, dtype=torch.float64, dist="corner"),
        Case((63, 65), seed=8, dtype=torch.int32),
    ),
    bench=(
        Case((1 << 27,), seed=11, dist="corner"),
        Case((8192, 16384), seed=12),
        Case((1 << 27,), seed=13, dtype=torch.float16, dist="corner"),
    ),
    flops=lambda c: 0.0,
    bytes_moved=lambda c: (1.0 + c.dtype.itemsize) * numel(c.shape),
    version=2,  # benchmark inputs drawn on the GPU, not on the CPU (2026-11-30)
    tolerance=Tolerance(rtol=0.0, atol=0.0),
    inplace=(1,),
)
