"""Math/signbit_bitwise_and: signbit of a float tensor, and its integer conversion ANDed with
another tensor."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, fractions that truncate to (signed) zero, a negative subnormal, a tiny value.
SPECIALS = (0.0, -0.0, 0.5, -0.5, -0.999, -1e-40, 1e-30)
LIMIT = {torch.int8: 127.0, torch.int16: 3e4, torch.int32: 2e9, torch.int64: 1e15, torch.bool: 1e30}


def reference(input: torch.Tensor, other: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.signbit(input), torch.bitwise_and(input.to(other.dtype), other)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    ity = case.params["other"]
    limit = LIMIT[ity]
    x = draw.tensor(case.shape, specials=SPECIALS, scale=case.params.get("scale", 1.0))
    x = torch.where(x.abs() < limit, x, x.sign() * limit)  # convertible; keeps -0.0
    if ity == torch.bool:
        y = draw.integers(case.shape, 0, 2).to(torch.bool)
    else:
        info = torch.iinfo(ity)
        y = draw.integers(case.shape, max(info.min, -(2**62)), min(info.max, 2**62), dtype=ity)
    return Inputs((x, y))


TASK = Task(
    entry="signbit_bitwise_and",
    signature=(
        "signbit_bitwise_and(input: torch.Tensor, other: torch.Tensor) "
        "-> Tuple[torch.Tensor, torch.Tensor]"
    ),
    description=(
        "For a float32 tensor `input` and a tensor `other` of the same shape with an integer "
        "or bool dtype, return a tuple: torch.signbit(input) (bool, True where the sign bit is "
        "set, so also for -0.0 and for negative subnormals) and torch.bitwise_and of input "
        "converted to other's dtype (truncation toward zero; for bool, nonzero is True and "
        "-0.0 is False) with `other`, in other's dtype. Inputs are normal, outlier and corner "
        "draws (signed zeros, +-0.5, -0.999, -1e-40, 1e-30) scaled to the integer range and "
        "kept inside it, so every conversion is defined. `other` is int8, int16, int32, int64 "
        "or bool, uniform over its range (int64: +-2^62)."
    ),
    math=r"s_i = [\text{sign bit of } x_i],\quad a_i = \mathrm{trunc}(x_i)\ \&\ y_i",
    precision="Bool and integer outputs, exact.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1, dist="corner", params={"other": torch.int8, "scale": 40.0}),
        Case((37, 1023), seed=2, dist="outlier", params={"other": torch.int32, "scale": 1e6}),
        Case((3, 129, 65), seed=3, dist="corner", params={"other": torch.int16, "scale": 1e3}),
        Case((2047, 5), seed=4, dist="corner", params={"other": torch.int64, "scale": 1e9}),
        Case((257, 31), seed=5, dist="corner", params={"other": torch.bool}),
        Case((1001,), seed=6, params={"other": torch.int32, "scale": 100.0}),
    ),
    bench=(
        Case((1 << 26,), seed=11, params={"other": torch.int32, "scale": 1e6}),
        Case((8192, 16384), seed=12, params={"other": torch.int8, "scale": 40.0}),
    ),
    flops=lambda c: 1.0 * numel(c.shape),
    bytes_moved=lambda c: (5.0 + 2 * c.params["other"].itemsize) * numel(c.shape),
    tolerance=Tolerance(rtol=0.0, atol=0.0),
)
