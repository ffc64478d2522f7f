"""SpatialOps/interpolate: resize NCHW images, nearest or bilinear, by size or scale factor."""

import functools
import math

import torch

from kbx.suite.inputs import Draw
from kbx.suite.shapes import resized_hw
from kbx.suite.task import Case, Inputs, Task, Tolerance

# Signed zeros, infinities and a NaN: nearest copies them unchanged.
SPECIALS = (0.0, -0.0, 1e30, float("inf"), float("-inf"), float("nan"))


def reference(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return torch.nn.functional.interpolate(
        input, size=size, scale_factor=scale_factor, mode=mode, align_corners=align_corners
    )


def make_inputs(case: Case, device: str) -> Inputs:
    x = Draw(case, device).tensor(case.shape, specials=SPECIALS)
    return Inputs((x,), dict(case.params))


def coords(n_in: int, n_out: int, sf, align: bool, device) -> torch.Tensor:
    """Source coordinates of torch's bilinear mapping, in float64."""
    d = torch.arange(n_out, dtype=torch.float64, device=device)
    if align:
        return d * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    scale = 1.0 / sf if sf else n_in / n_out
    return (scale * (d + 0.5) - 0.5).clamp(min=0.0)


def check(inputs: Inputs, out: torch.Tensor) -> str | None:
    """Nearest: exactly torch's pixels. Bilinear: torch's value computed in float64, within
    1e-5 (1 + |y|) plus what a few-ulp change of the float32 source coordinate can move it:
    2^-21 * in_size * (largest |slope| near the source pixel) per axis. Float32 coordinates differ
    between exact formulas by rounding (fused multiply-add or not, scale rounding), and the
    bilinear output moves by the coordinate error times the local pixel difference.  Evaluated on
    the inputs' device: on one CPU thread the benchmark cases took 38 s (H200, 2026-11-30)."""
    x, p = inputs.args[0], dict(inputs.kwargs)
    got = out.to(x.device).double()
    if p.get("mode", "nearest") == "nearest":
        want = reference(x, **p).double()
        bad = ~((got == want) | (torch.isnan(got) & torch.isnan(want)))
        slack = torch.zeros_like(want)
    else:
        want = reference(x.double(), **p)
        H, W = x.shape[2:]
        OH, OW = want.shape[2:]
        sf = p.get("scale_factor")
        sf = (sf, sf) if isinstance(sf, float | int) else (sf or (None, None))
        align = bool(p.get("align_corners"))
        h0 = coords(H, OH, sf[0], align, x.device).floor().long().clamp(0, H - 1)
        w0 = coords(W, OW, sf[1], align, x.device).floor().long().clamp(0, W - 1)
        near = torch.nn.functional.max_pool2d(x.double().abs(), 3, 1, 1)  # 3x3 max |x|
        slope = 2.0 * near[:, :, h0][:, :, :, w0]
        slack = 2.0**-21 * (H + W) * slope
        close = (got - want).abs() <= 1e-5 * (1.0 + want.abs()) + slack
        same = (got == want) | (torch.isnan(got) & torch.isnan(want))
        bad = ~torch.where(torch.isfinite(want), close, same)
    if bad.any():
        i = int(torch.argmax(bad.reshape(-1).to(torch.int8)))
        at = tuple(int(v) for v in torch.unravel_index(torch.tensor(i), bad.shape))
        return (
            f"{int(bad.sum())}/{bad.numel()} pixels differ from torch's (slack "
            f"{slack.reshape(-1)[i].item():.2g}); first at {at}: got "
            f"{got.reshape(-1)[i].item():.7g}, expected {want.reshape(-1)[i].item():.7g}"
        )
    return None


def moved(c: Case) -> float:
    """The input pixels some output pixel takes (a downscale skips rows and columns) and the
    output."""
    n, ch, h, w = c.shape
    oh, ow = resized_hw(c, "size", "scale_factor")
    return 4.0 * n * ch * (read_pixels(h, w, tuple(sorted(c.params.items()))) + oh * ow)


@functools.cache
def read_pixels(h: int, w: int, params: tuple) -> int:
    """Pixels of an (h, w) plane with a nonzero weight in some output pixel: the gradient of
    the output's sum on a probe plane."""
    with torch.inference_mode(False), torch.enable_grad():  # callers may hold no_grad
        probe = torch.ones(1, 1, h, w, requires_grad=True)
        reference(probe, **dict(params)).sum().backward()
    assert probe.grad is not None
    return int((probe.grad != 0).sum())


TASK = Task(
    entry="interpolate",
    signature="interpolate(input, size=None, scale_factor=None, mode='nearest', "
    "align_corners=None)",
    description=(
        "Resize a float32 NCHW `input` over its last two dims, as torch.nn.functional.interpolate. "
        "Exactly one of `size` (int or (H_out, W_out)) and `scale_factor` (float or a pair) is "
        "given; with scale_factor, H_out = floor(H * s_h) and, as torch does by default "
        "(recompute_scale_factor unset), the coordinate mapping uses 1 / s_h, not H / H_out. "
        "Modes exercised: 'nearest' (src = min(floor(dst * scale), in - 1), with scale a float32 "
        "value, and dst copied unchanged where in == out) and 'bilinear' with align_corners False "
        "(half-pixel centres, src = max(scale * (dst + 0.5) - 0.5, 0)) or True "
        "(src = dst * (in - 1) / (out - 1)); other modes may raise. Cases use non-integer scale "
        "factors, up- and down-sampling, sizes where dst * scale lands within float32 rounding "
        "of an integer (a float64 or exact-rational index computation picks another pixel), "
        "and avoid outputs of exactly twice the input size with a "
        "scale factor other than 2 (where torch's CPU and CUDA kernels disagree). Output: float32 "
        "(N, C, H_out, W_out)."
    ),
    math=r"\mathrm{bilinear:}\ y = (1-\lambda_h)\left[(1-\lambda_w)x_{h_0 w_0} + "
    r"\lambda_w x_{h_0 w_1}\right] + \lambda_h\left[(1-\lambda_w)x_{h_1 w_0} + "
    r"\lambda_w x_{h_1 w_1}\right]",
    precision=(
        "float32 in and out. Nearest must pick exactly torch's source pixel (float32 index "
        "arithmetic as torch) and copy it bit for bit. Bilinear: coordinates and weights in "
        "float32; judged against torch's result in float64 with slack 1e-5 (1 + |y|) plus "
        "2^-21 * (H + W) * 2 max|x| over the 3x3 input pixels around the source point, i.e. "
        "what a few-ulp difference in the float32 source coordinate explains."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case((2, 3, 13, 26), seed=1, params={"size": (29, 22)}),
        Case((1, 4, 19, 16), seed=2, dist="outlier", params={"scale_factor": 1.1}),
        Case((2, 2, 24, 13), seed=3, dist="corner", params={"scale_factor": (0.45, 1.3)}),
        Case(
            (2, 3, 11, 13),
            seed=4,
            dist="outlier",
            params={"size": (20, 7), "mode": "bilinear", "align_corners": False},
        ),
        Case(
            (1, 5, 9, 14),
            seed=5,
            params={"scale_factor": (1.5, 0.7), "mode": "bilinear", "align_corners": True},
        ),
        Case((3, 2, 7, 9), seed=6, params={"scale_factor": 2.3, "mode": "bilinear"}),
    ),
    bench=(
        Case(
            (8, 64, 256, 256),
            seed=11,
            params={"size": (512, 512), "mode": "bilinear", "align_corners": False},
        ),
        Case((8, 64, 256, 256), seed=12, params={"scale_factor": 2.0}),
        Case(
            (8, 64, 512, 512),
            seed=13,
            params={"scale_factor": 0.6, "mode": "bilinear", "align_corners": True},
        ),
    ),
    flops=lambda c: (
        (11.0 if c.params.get("mode") == "bilinear" else 0.0)
        * c.shape[0]
        * c.shape[1]
        * math.prod(resized_hw(c, "size", "scale_factor"))
    ),
    bytes_moved=moved,
    tolerance=Tolerance(rtol=1e-5, atol=1e-5),  # unused: check() judges the values
    check=check,
)
