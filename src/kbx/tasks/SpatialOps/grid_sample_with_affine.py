"""SpatialOps/grid_sample_with_affine: affine_grid from theta, then grid_sample, in one call."""

import torch
import torch.nn.functional as F

from kbx.suite.inputs import Draw
from kbx.suite.sampling import TAPS, mode, out_elems, outside
from kbx.suite.task import Case, Inputs, Task, Tolerance

IMAGE_SPECIALS = (0.0, -0.0, 1e-30, 1e3, -1e3)


def reference(input, theta, size, mode="bilinear", padding_mode="zeros", align_corners=False):
    grid = F.affine_grid(theta, size, align_corners=align_corners)
    return F.grid_sample(input, grid, mode, padding_mode, align_corners)


def make_inputs(case: Case, device: str) -> Inputs:
    """shape (N, C, H_in, W_in); params: out (H_out, W_out) and the call's keyword arguments."""
    p = dict(case.params)
    n, c, _, _ = case.shape
    d = Draw.sized(case, device)
    x = d.tensor(case.shape, specials=IMAGE_SPECIALS)
    # Rotation/scale/shear around the identity plus a translation; a corner case also gets the
    # exact identity (points on pixel centres or edges) and a mirror image.
    theta = torch.eye(2, 3, device=d.device) + d.tensor((n, 2, 3), dist="normal", scale=0.4)
    if case.dist == "corner":
        theta[0] = torch.eye(2, 3, device=d.device)
        theta[-1, 0, :2] = torch.tensor([-1.0, 0.0])
    x, theta = x.to(device), theta.to(device)
    return Inputs((x, theta, torch.Size((n, c, *p.pop("out")))), p)


def check(inputs: Inputs, out: torch.Tensor) -> str | None:
    """Within float32 coordinate rounding of the float64 result (kbx.suite.sampling)."""
    x, theta, size = inputs.args[:3]
    kw = dict(inputs.kwargs)
    grid = F.affine_grid(theta.double(), size, align_corners=kw.get("align_corners", False))
    return outside(x, grid, kw, out)


TASK = Task(
    entry="grid_sample_with_affine",
    signature=(
        "grid_sample_with_affine(input: torch.Tensor, theta: torch.Tensor, size: torch.Size, "
        "mode: str='bilinear', padding_mode: str='zeros', align_corners: bool=False) "
        "-> torch.Tensor"
    ),
    description=(
        "Spatial-transformer resampling: F.grid_sample(input, F.affine_grid(theta, size, "
        "align_corners), mode, padding_mode, align_corners). `input` is a contiguous float32 "
        "(N, C, H_in, W_in) image batch, `theta` a float32 (N, 2, 3) affine matrix per image, "
        "`size` a torch.Size (N, C, H_out, W_out). Output pixel (h, w) samples the input at "
        "normalized (x, y) = theta[n] @ (x_w, y_h, 1), where x_w = -1 + (2w + 1) / W_out "
        "(align_corners=False) or -1 + 2w / (W_out - 1) (True), likewise y_h; normalized "
        "coordinates map to pixels as ((x + 1) * W_in - 1) / 2, resp. ((x + 1) / 2) * "
        "(W_in - 1). mode 'bilinear', 'nearest' (round half to even) or 'bicubic' (cubic "
        "convolution, A = -0.75); padding_mode 'zeros', 'border' or 'reflection', applied as in "
        "grid_sample (to the coordinate for bilinear/nearest, to each tap for bicubic). The "
        "grid need not be materialized. Output (N, C, H_out, W_out) float32. Cases: all modes, "
        "padding modes and both align_corners, odd sizes, up- and down-sampling, rotations, "
        "shears, translations pushing points outside the image, the exact identity and a mirror."
    ),
    math=r"(x, y)^\top = \Theta_n\,(x_w, y_h, 1)^\top,\quad "
    r"y_{n,c,h,w} = \mathrm{sample}(X_{n,c}; x, y)",
    precision=(
        "float32 in and out. Coordinates are computed in float32 by any formula, so the output "
        "is judged in float64 against the range of values grid_sample gives at the exact affine "
        "grid displaced by up to 2^-18 (1 + |g|) per component (about 30 float32 ulps), widened "
        "by the range's own width and by 1e-5 of the local magnitude (largest |input| among "
        "nearby taps). Half-precision coordinates or values, a wrong base grid, tap, weight or "
        "padding rule fall outside it."
    ),
    reference=reference,
    make_inputs=make_inputs,
    version=2,  # benchmark inputs derived on the GPU, not on the CPU (2026-11-30)
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
            (2, 3, 11, 16),
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
            (8, 64, 256, 256),
            seed=11,
            params={"out": (256, 256), **mode("bilinear", "zeros", False)},
        ),
        Case(
            (8, 32, 256, 256),
            seed=12,
            params={"out": (384, 384), **mode("bicubic", "border", True)},
        ),
    ),
    flops=lambda c: (3.0 * TAPS[c.params["mode"]] + 8.0) * out_elems(c),
    # the output and theta: which input pixels a random theta reads depends on the draw
    bytes_moved=lambda c: 4.0 * (out_elems(c) + 6 * c.shape[0]),
    tolerance=Tolerance(rtol=1e-5, atol=1e-5),  # unused: `check` judges the output
    check=check,
)
