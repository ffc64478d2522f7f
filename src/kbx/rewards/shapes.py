"""Reward shapes: a kbx result (a ``Result`` or its record) to one number.

- ``correct``: 1 for a passed candidate, else 0.
- ``log_speedup``: a passed candidate gets ``correct`` plus ``speed_weight`` times the log of its
  speedup over eager, clipped to +-``log_clip``; with no speedup (quick tier, CPU) the log term
  is 0.  Slower-than-eager kernels lose part of their correctness credit, never all of it.
- ``kernelgym``: staged, after KernelGYM's design: a little credit for code that imports
  (``import_credit``), the correctness credit for a passed candidate, and a speed bonus only for
  a correct kernel faster than eager (``speed_weight`` times speedup - 1, capped at
  ``speed_cap``); a candidate caught doing something else than the assignment (``no_triton``,
  ``forbidden``, ``too_fast``) gets ``hack_penalty`` however far it got.
- ``kevin``: after Kevin-32B: ``correct`` (0.3 by default) for a passed candidate plus its
  speedup itself, linearly; nothing for a failed one.  For multi-turn refinement,
  ``discounted`` sums later turns' rewards into each turn with factor ``gamma``.

Every shape gives ``failure`` (0) to a candidate that did not pass, except as said, and a
``harness_error`` (kbx's fault, never the candidate's) gets ``harness_reward``: by default
None, which the adapters report as "no reward", so a trainer can drop the sample.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kbx.core.result import Result

HACKS = frozenset({"no_triton", "forbidden", "too_fast"})
IMPORTED = frozenset({"read", "import"})  # stages a candidate that did not import ended in


class Shape(BaseModel):
    """A reward shape and its parameters (defaults: the module's docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["correct", "log_speedup", "kernelgym", "kevin"] = "correct"
    correct: float = Field(1.0, description="credit for a passed candidate")
    failure: float = Field(0.0, description="a candidate that did not pass")
    speed_weight: float = Field(1.0, ge=0, description="weight of the speed term")
    log_clip: float = Field(math.log(10), gt=0, description="log_speedup: |log| clipped here")
    speed_cap: float = Field(2.0, ge=0, description="kernelgym: the most its speed bonus gives")
    import_credit: float = Field(0.1, description="kernelgym: a candidate that imports")
    hack_penalty: float = Field(-0.5, description="kernelgym: no_triton, forbidden, too_fast")
    harness_reward: float | None = Field(None, description="a harness_error (None: no reward)")

    @classmethod
    def kevin(cls) -> Shape:
        return cls(kind="kevin", correct=0.3)


def record_of(result: Result | Mapping[str, Any]) -> Mapping[str, Any]:
    return result.record() if isinstance(result, Result) else result


def reward(result: Result | Mapping[str, Any], shape: Shape | None = None) -> float | None:
    """The reward of ``result`` under ``shape`` (default: ``correct``); None for a harness
    error under the default ``harness_reward``."""
    shape = shape or Shape()
    rec = record_of(result)
    verdict = str(rec.get("verdict"))
    if verdict == "harness_error":
        return shape.harness_reward
    speedup = rec.get("speedup")
    passed = verdict == "passed"
    if shape.kind == "correct":
        return shape.correct if passed else shape.failure
    if shape.kind == "log_speedup":
        if not passed:
            return shape.failure
        log = math.log(speedup) if speedup and speedup > 0 else 0.0
        return shape.correct + shape.speed_weight * max(-shape.log_clip, min(shape.log_clip, log))
    if shape.kind == "kernelgym":
        return staged(verdict, str(rec.get("stage")), speedup, shape)
    if not passed:
        return shape.failure
    return shape.correct + shape.speed_weight * (speedup or 0.0)


def staged(verdict: str, stage: str, speedup: float | None, shape: Shape) -> float:
    """The ``kernelgym`` shape."""
    if verdict in HACKS:
        return shape.hack_penalty
    if verdict != "passed":
        return shape.failure if stage in IMPORTED else shape.import_credit
    bonus = shape.speed_weight * max(0.0, (speedup or 1.0) - 1.0)
    return shape.correct + min(shape.speed_cap, bonus)


def discounted(rewards: Sequence[float], gamma: float = 0.4) -> list[float]:
    """Each turn's return in a refinement episode: its reward plus the later turns', each
    further turn weighted by another factor ``gamma`` (Kevin's multi-turn credit)."""
    out, running = [0.0] * len(rewards), 0.0
    for i in range(len(rewards) - 1, -1, -1):
        running = rewards[i] + gamma * running
        out[i] = running
    return out
