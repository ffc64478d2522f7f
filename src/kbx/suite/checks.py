"""Building blocks of task property checkers (shared by the suite's random tasks)."""

from __future__ import annotations

import math

import torch


def off_rate(hits: torch.Tensor, expected: float, what: str) -> str | None:
    """None if the fraction of hits lies within 5 binomial sigma of ``expected``, else why not."""
    n = hits.numel()
    rate = int(hits.sum()) / max(n, 1)
    band = 5 * math.sqrt(expected * (1 - expected) / max(n, 1))
    if abs(rate - expected) <= band:
        return None
    return f"{rate:.4f} of {n} {what}, expected {expected:.4f} (+-{band:.4f}, 5 sigma)"
