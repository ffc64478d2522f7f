"""Fidelity tiers: how much an evaluation measures, and the Evaluator settings of each.

``quick``: the correctness cases only, nothing timed.  ``standard``: the benchmark sizes timed
against the eager and torch.compile baselines, as ``kbx eval`` does.  ``thorough``: the same with
tighter timing intervals (``Tuning.timing_rel_ci``) and a longer budget per case.  On the CPU
nothing is timed, so the three tiers evaluate alike there (the tier stays in the content key).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from kbx.core.config import Tuning

Tier = Literal["quick", "standard", "thorough"]
TIERS: tuple[str, ...] = get_args(Tier)
THOROUGH_REL_CI = 0.0025  # the median's 95% CI within +-0.25% (standard: +-1%)
THOROUGH_BUDGET_MS = 4000.0  # per benchmark case (standard: 500 ms)


@dataclass(frozen=True)
class Profile:
    """What an Evaluator for a tier is opened with; tiers with equal profiles share one."""

    perf: bool
    tuning: Tuning


def profile(tier: str, device: str, tuning: Tuning) -> Profile:
    """The Evaluator settings of ``tier`` on ``device``, over the service's ``tuning``."""
    if tier not in TIERS:
        raise ValueError(f"no tier {tier!r}: one of {', '.join(TIERS)}")
    if device != "cuda" or tier == "quick":
        return Profile(perf=False, tuning=tuning)
    if tier == "thorough":
        tighter = {"timing_rel_ci": THOROUGH_REL_CI, "timing_budget_ms": THOROUGH_BUDGET_MS}
        return Profile(perf=True, tuning=tuning.model_copy(update=tighter))
    return Profile(perf=True, tuning=tuning)
