"""The symmetric int8 quantization recipe of the Quantization tasks, and the tie avoidance that
makes their comparisons exact.

A scale is max |t| / 127 over a slice (a row, a token, an image, a whole tensor), 1 for an
all-zero slice; values quantize to round(t / scale) clamped to [-127, 127], rounding half to even.
Inputs are then moved away from rounding ties, so that dividing by the scale or multiplying by its
reciprocal, in any float32 evaluation, gives the same integers as the reference.
"""

from __future__ import annotations

import torch


def scales(t: torch.Tensor, dims: int | tuple[int, ...]) -> torch.Tensor:
    """max |t| / 127 over ``dims`` (kept as size-1 dims), 1 where a slice is all zero."""
    s = t.abs().amax(dim=dims, keepdim=True) / 127  # float32 division, correctly rounded
    return torch.where(s == 0, torch.ones_like(s), s)


def quantize(t: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """The int8 values of ``t`` at scales ``s``, as integer-valued floats."""
    return torch.clamp(torch.round(t / s), -127, 127)  # round half to even


def away_from_ties(t: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """``t`` with every t / s moved at least 0.1 away from a rounding tie (x.5).  The largest |t|
    (t / s an integer) does not move, so neither do the scales."""
    q = t / s
    f = q - torch.round(q)
    return torch.where(f.abs() > 0.4, (torch.round(q) + f.clamp(-0.4, 0.4)) * s, t)
