"""Pooling/avg_pool1d: sliding-window average over the last dim of an (N, C, L) tensor."""

import torch

from kbx.suite.inputs import Draw
from kbx.suite.shapes import pool_out
from kbx.suite.task import Case, Inputs, Task, Tolerance


def reference(input, kernel_size, stride=None, padding=0):
    return torch.nn.functional.avg_pool1d(input, kernel_size, stride=stride, padding=padding)


# Signed zeros, tiny and large values; only one sign of large value, so that no window sums
# +1e4 and -1e4 (that cancellation would make the result depend on the summation order).
SPECIALS = (0.0, -0.0, 1e4, 1e-30, -1e-30)


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(case.shape, specials=SPECIALS)
    p = dict(case.params)
    return Inputs((x, p.pop("kernel_size")), p)


TASK = Task(
    entry="avg_pool1d",
    signature="avg_pool1d(input, kernel_size, stride=None, padding=0)",
    description=(
        "1-D average pooling of a float32 `input` (N, C, L) along its last dim, as "
        "torch.nn.functional.avg_pool1d with its defaults ceil_mode=False and "
        "count_include_pad=True. The input is zero-padded by `padding` (an int, at most "
        "kernel_size // 2) on both sides; window i covers padded positions "
        "[i * stride, i * stride + kernel_size) and its output is the window's sum divided by "
        "kernel_size (padded zeros count). stride=None means stride = kernel_size. Output shape "
        "(N, C, L_out), L_out = (L + 2 * padding - kernel_size) // stride + 1, float32. "
        "`kernel_size`, `stride` and `padding` are Python ints. Cases: stride None, stride smaller "
        "than and equal to the kernel, padding > 0, odd L."
    ),
    math=r"y_{n,c,i} = \frac{1}{k}\sum_{m=0}^{k-1} x^{\mathrm{pad}}_{n,c,\,i s + m}",
    precision="float32 in, float32 out, window sums in float32; rtol=1e-5, atol=1e-6.",
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((4, 7, 101), seed=1, params={"kernel_size": 3}),
        Case((3, 5, 257), seed=2, dist="outlier", params={"kernel_size": 4, "stride": 2}),
        Case(
            (2, 9, 63), seed=3, dist="corner", params={"kernel_size": 5, "stride": 3, "padding": 2}
        ),
        Case((5, 3, 1001), seed=4, params={"kernel_size": 7, "stride": 1, "padding": 3}),
        Case((3, 2, 17), seed=5, dist="outlier", params={"kernel_size": 17}),
        Case(
            (2, 3, 50), seed=6, dist="corner", params={"kernel_size": 2, "stride": 5, "padding": 1}
        ),
    ),
    bench=(
        Case((64, 512, 4096), seed=11, params={"kernel_size": 4}),
        Case((32, 256, 8191), seed=12, params={"kernel_size": 3, "stride": 1, "padding": 1}),
    ),
    flops=lambda c: float(c.shape[0] * c.shape[1] * pool_out(c)[0] * c.params["kernel_size"]),
    bytes_moved=lambda c: 4.0 * c.shape[0] * c.shape[1] * (c.shape[2] + pool_out(c)[0]),
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
)
