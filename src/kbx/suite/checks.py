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


# Elements this many apart along a dim: a mask of independent draws agrees (both dropped or both
# kept) as often at every distance; a lattice of masks, frac(h + k * p(1-p)) over a few elements
# with h drawn once for them, agrees as often at distance 1 alone (tests/exploits/lattice_dropout)
LAGS = (1, 2, 3, 4)


def pairs_agree(dropped: torch.Tensor, clear: torch.Tensor, p: float, name: str) -> str | None:
    """None if disjoint pairs of entries along dim 0, ``k`` apart for each k in ``LAGS``, both
    ``clear`` (their decision visible), agree as often as independent draws do (p^2 + (1-p)^2,
    within 5 binomial sigma), else why not; ``name``: what the entries along dim 0 are."""
    for k in LAGS:
        m = dropped.shape[0] // (2 * k) * (2 * k)
        if m == 0:
            break
        d, c = (t[:m].unflatten(0, (m // (2 * k), 2, k)) for t in (dropped, clear))
        both = c[:, 0] & c[:, 1]
        if not both.any():
            continue
        what = (
            f"pairs of neighbouring {name} agree" if k == 1 else f"pairs of {name} {k} apart agree"
        )
        reason = off_rate((d[:, 0] == d[:, 1])[both], p * p + (1 - p) ** 2, what)
        if reason:
            return reason
    return None
