"""Math/ifftshift: move the zero-frequency entry of FFT-ordered data back to the front (a roll)."""

import torch

from kbx.suite.inputs import Draw, numel
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(input, dim=None):
    return torch.fft.ifftshift(input, dim=dim)


def make_inputs(case: Case, device: str) -> Inputs:
    draw = Draw(case, device)
    if case.dtype.is_complex:
        real = draw.tensor(case.shape, dtype=torch.float32)
        imag = draw.tensor(case.shape, dtype=torch.float32)
        x = torch.complex(real, imag).to(case.dtype)
    elif case.dtype.is_floating_point:
        x = draw.tensor(case.shape)
    else:
        x = draw.integers(case.shape, -(2**40), 2**40, dtype=case.dtype)
    return Inputs((x,), {"dim": case.params["dim"]} if "dim" in case.params else {})


TASK = Task(
    entry="ifftshift",
    signature="ifftshift(input, dim=None)",
    description=(
        "Undo fftshift, as torch.fft.ifftshift: along every dim in `dim` (an int, a tuple of "
        "ints, possibly negative, or None for all dims) roll the tensor by -(n // 2), where n "
        "is that dim's size, i.e. out[..., i, ...] = input[..., (i + n // 2) % n, ...]; other "
        "dims are untouched. Returns a new tensor of the input's shape and dtype. A pure data "
        "movement: odd sizes (where fftshift and ifftshift differ) matter. Cases: 1-D to 4-D, "
        "odd and even sizes, dim None, an int, a negative int and tuples; float32 (normal, "
        "outlier, corner values including NaN and signed zeros, copied bit for bit), float64, "
        "int64 and complex64 (the usual FFT data)."
    ),
    math=r"y_{\ldots, i, \ldots} = x_{\ldots, (i + \lfloor n/2 \rfloor) \bmod n, \ldots}",
    precision="Exact copy of the input's values (dtype unchanged).",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4099,), seed=1),
        Case((37, 1023), seed=2, dist="outlier"),
        Case((3, 129, 65), seed=3, dist="corner", params={"dim": 1}),
        Case((5, 6, 7, 9), seed=4, params={"dim": (0, 2)}),
        Case((33, 64), seed=5, dtype=torch.complex64),
        Case((2, 3, 31, 33), seed=6, dtype=torch.complex64, params={"dim": (-1, -2)}),
        Case((1001,), seed=7, dtype=torch.int64, params={"dim": -1}),
        Case((15, 17), seed=8, dtype=torch.float64, dist="corner", params={"dim": -1}),
    ),
    bench=(
        Case((8191, 8193), seed=11, dtype=torch.complex64),
        Case((16, 2048, 2049), seed=12, params={"dim": (-2, -1)}),
        Case((1 << 27,), seed=13),
    ),
    flops=lambda c: 0.0,
    bytes_moved=lambda c: 2.0 * c.dtype.itemsize * numel(c.shape),
    tolerance=Tolerance(rtol=0.0, atol=0.0),
)
