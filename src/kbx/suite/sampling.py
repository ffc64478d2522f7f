"""What the grid_sample tasks share (SpatialOps/grid_sample and grid_sample_with_affine): their
case parameters, their output size, and the property check that accepts any output within
float32 coordinate rounding of the float64 result.

A sampled value is not unique in float32: a grid coordinate rounded differently (fused
multiply-add, another unnormalization order) moves a bilinear or bicubic output by the local
pixel difference.  The check therefore accepts the float64 range over grid points jittered by up
to ``JITTER * (1 + |g|)`` per component, widened by its own width, plus 1e-5 of a magnitude scale.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from kbx.suite.task import Case

JITTER = 2.0**-18  # allowed grid displacement, relative to 1 + |g|
TAPS = {"nearest": 1, "bilinear": 4, "bicubic": 16}  # pixels read per output value


def mode(m: str, pad: str, align: bool) -> dict[str, Any]:
    """A case's sampling parameters: mode, padding_mode, align_corners."""
    return {"mode": m, "padding_mode": pad, "align_corners": align}


def out_elems(c: Case) -> int:
    """Output elements: N * C * OH * OW, with (OH, OW) the case's ``out`` parameter."""
    return c.shape[0] * c.shape[1] * c.params["out"][0] * c.params["out"][1]


def envelope(
    x: torch.Tensor, grid: torch.Tensor, kw: dict[str, Any]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """float64 range of the output over grid points displaced by up to JITTER * (1 + |g|) per
    component (float32 coordinate rounding), widened by its own width, and a magnitude scale."""
    x, grid = x.double(), grid.double()
    eps = JITTER * (1 + grid.abs())

    def shifted(a: int, b: int) -> torch.Tensor:
        shift = torch.stack((a * eps[..., 0], b * eps[..., 1]), dim=-1)
        return F.grid_sample(x, grid + shift, **kw)

    lo = hi = shifted(-1, -1)
    for a, b in [(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1)][1:]:
        v = shifted(a, b)
        lo, hi = torch.minimum(lo, v), torch.maximum(hi, v)
    width = hi - lo
    # Rounding scale: sum of |weight * tap| for bilinear and nearest; for bicubic (negative
    # lobes, 16 taps) the largest |x| within 2 pixels.
    if kw.get("mode", "bilinear") == "bicubic":
        local = F.max_pool2d(x.abs(), 5, stride=1, padding=2)
        scale = F.grid_sample(local, grid, "bilinear", "border", align_corners=False)
    else:
        scale = F.grid_sample(x.abs(), grid, **kw)
    return lo - width, hi + width, scale + lo.abs() + hi.abs()


def outside(
    x: torch.Tensor, grid: torch.Tensor, kw: dict[str, Any], out: torch.Tensor
) -> str | None:
    """None if every output lies in the envelope (1e-5 of the scale beyond it), else why not."""
    lo, hi, scale = envelope(x, grid, kw)
    got = out.to(x.device).double()
    slack = 1e-5 * scale
    bad = ~((got >= lo - slack) & (got <= hi + slack))
    if not bad.any():
        return None
    i = int(torch.argmax(bad.reshape(-1).to(torch.int8)))
    return (
        f"{int(bad.sum())}/{bad.numel()} outputs outside the accepted range; first at flat index "
        f"{i}: got {got.reshape(-1)[i].item():.7g}, accepted "
        f"[{(lo - slack).reshape(-1)[i].item():.7g}, {(hi + slack).reshape(-1)[i].item():.7g}]"
    )
