"""SpatialOps/grid_sample: sample NCHW images at normalized grid points (3 modes, 3 paddings)."""

import math

import torch
import torch.nn.functional as F

from kbx.suite.inputs import Draw
from kbx.suite.sampling import TAPS, mode, out_elems, outside
from kbx.suite.task import Case, Inputs, Task, Tolerance

IMAGE_SPECIALS = (0.0, -0.0, 1e-30, 1e3, -1e3)
GRID_SPECIALS = (0.0, -0.0, 1.0, -1.0, 1.5, -2.5, 30.0)  # borders, outside, far outside


def reference(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    return F.grid_sample(input, grid, mode, padding_mode, align_corners)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C, H_in, W_in); params: out (H_out, W_out) and the call's keyword arguments."""
    p = dict(case.params)
    n, _, _, _ = case.shape
    d = Draw(case, device)
    x = d.tensor(case.shape, specials=IMAGE_SPECIALS)
    grid = d.tensor((n, *p.pop("out"), 2), specials=GRID_SPECIALS, scale=0.6)
    return Inputs((x, grid), p)


def check(inputs: Inputs, out: torch.Tensor) -> str | None:
    """Within float32 coordinate rounding of the float64 result (kbx.suite.sampling)."""
    x, grid = inputs.args[:2]
    return outside(x, grid, dict(inputs.kwargs), out)


TASK = Task(
    entry="grid_sample",
    signature=(
        "grid_sample(input, grid, mode='bilinear', padding_mode='zeros', align_corners=False)"
    ),
    description=(
        "Sample a contiguous float32 image batch `input` (N, C, H_in, W_in) at the points of a "
        "contiguous float32 `grid` (N, H_out, W_out, 2), as torch.nn.functional.grid_sample: "
        "grid[n, h, w] = (x, y) in normalized coordinates, -1 and 1 being the centres of the "
        "edge pixels when align_corners=True and the outer edges of the edge pixels when False "
        "(pixel x = ((x + 1) / 2) * (W_in - 1), resp. ((x + 1) * W_in - 1) / 2). Output "
        "(N, C, H_out, W_out) float32. mode: 'bilinear' (4 taps), 'nearest' (the tap at the "
        "coordinate rounded half to even) or 'bicubic' (4x4 taps, cubic convolution with "
        "A = -0.75). padding_mode for points or taps outside the image: 'zeros' (taps read 0), "
        "'border' (coordinates clamped to the image) or 'reflection' (coordinates reflected at "
        "the borders - at the pixel centres when align_corners, else at the outer edges - then "
        "clamped); for bilinear and nearest the padding applies to the sample coordinate, for "
        "bicubic to each tap's integer coordinate, exactly as PyTorch. Only 4-D inputs are "
        "exercised. Cases cover the three modes, three padding modes, both align_corners, odd "
        "sizes, grid points far outside [-1, 1], on the borders and at signed zeros."
    ),
    math=r"y_{n,c,h,w} = \sum_{i,j} k(u - i)\,k(v - j)\,\tilde{x}_{n,c,j,i},\quad "
    r"(u, v) = \mathrm{unnormalize}(\mathrm{grid}_{n,h,w})",
    precision=(
        "float32 in and out. Coordinates are computed in float32 by any formula, so the output "
        "is judged in float64 against the range of values torch.grid_sample produces for grid "
        "points displaced by up to 2^-18 (1 + |g|) per component (about 30 float32 ulps of the "
        "grid value), widened by the range's own width and by 1e-5 of the local magnitude "
        "(largest |input| among nearby taps). A half-precision computation, a wrong tap, "
        "weight, padding rule or rounding of the nearest index falls outside it."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 3, 13, 17), seed=1, params={"out": (11, 9), **mode("bilinear", "zeros", False)}),
        Case(
            (1, 4, 20, 15),
            seed=2,
            dist="outlier",
            params={"out": (16, 21), **mode("bilinear", "border", True)},
        ),
        Case(
            (2, 2, 9, 14),
            seed=3,
            dist="corner",
            params={"out": (7, 12), **mode("bilinear", "reflection", False)},
        ),
        Case(
            (2, 3, 15, 11),
            seed=4,
            dist="outlier",
            params={"out": (10, 13), **mode("nearest", "reflection", False)},
        ),
        Case(
            (1, 3, 11, 16),
            seed=5,
            dist="corner",
            params={"out": (9, 8), **mode("nearest", "zeros", True)},
        ),
        Case((1, 5, 12, 19), seed=6, params={"out": (9, 8), **mode("bicubic", "border", False)}),
        Case(
            (2, 2, 10, 10),
            seed=7,
            dist="corner",
            params={"out": (13, 7), **mode("bicubic", "reflection", True)},
        ),
        Case(
            (1, 3, 17, 12),
            seed=8,
            dist="outlier",
            params={"out": (6, 11), **mode("bicubic", "zeros", False)},
        ),
    ),
    bench=(
        Case(
            (8, 64, 128, 128),
            seed=11,
            params={"out": (256, 256), **mode("bilinear", "zeros", False)},
        ),
        Case(
            (8, 32, 256, 256),
            seed=12,
            params={"out": (256, 256), **mode("bicubic", "border", True)},
        ),
    ),
    flops=lambda c: 3.0 * TAPS[c.params["mode"]] * out_elems(c),
    # the output and the grid: which input pixels a random grid reads depends on the draw
    bytes_moved=lambda c: 4.0 * (out_elems(c) + 2 * c.shape[0] * math.prod(c.params["out"])),
    tolerance=Tolerance(rtol=1e-5, atol=1e-5),  # unused: `check` judges the output
    check=check,
)
