"""The pass rate, defined once: what ``kbx eval``'s table, ``summary.json`` and ``kbx analyze``
report (docs/usage.md, "The pass rate").

A run's tasks attempted are the tasks that at least one of its candidates names, at the run's
final round and first sample; a task passed when one of those candidates passed.  The pass rate
is passed / attempted, or passed / the suite's tasks when asked over the suite.  Candidates
that name no task of the suite (an unreadable line, an unknown task) are not tasks: they are
counted apart, by verdict.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbx.suite.verdict import Verdict

NOT_TASKS = (Verdict.UNKNOWN_TASK, Verdict.UNREADABLE)


@dataclass(frozen=True)
class Tally:
    """Tasks attempted and passed; ``apart``: candidates that name no task, by verdict."""

    attempted: int
    passed: int
    suite: int
    apart: dict[str, int] = field(default_factory=dict)

    def rate(self, over: str = "attempted") -> float | None:
        """passed / attempted (or / suite); None when there is nothing to divide by."""
        den = self.suite if over == "suite" else self.attempted
        return self.passed / den if den else None

    def line(self) -> str:
        """``3 of 4 tasks passed (75%); 4 of 184 attempted; not tasks: unreadable 1``."""
        rate = self.rate()
        text = f"{self.passed} of {self.attempted} tasks passed"
        text += f" ({100 * rate:.0f}%)" if rate is not None else " (n/a)"
        text += f"; {self.attempted} of {self.suite} attempted"
        if self.apart:
            text += "; not tasks: " + ", ".join(f"{v} {n}" for v, n in sorted(self.apart.items()))
        return text


def suite_size() -> int:
    """The suite's tasks, counted from its files (no task is imported: no torch needed)."""
    return len(list((Path(__file__).resolve().parents[1] / "tasks").glob("*/*.py")))


def is_task(record: Mapping[str, Any]) -> bool:
    """Whether a record names a task of the suite (its verdict says so)."""
    return record.get("verdict") not in NOT_TASKS


def level(record: Mapping[str, Any], key: str) -> int:
    """A record's round or sample: its own field, else its meta's (a submission's, which may
    hold anything); 0 where neither is a whole number."""
    meta = record.get("meta")
    value = record.get(key) or (meta.get(key) if isinstance(meta, Mapping) else None) or 0
    if isinstance(value, int):
        return int(value)
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return 0
    return int(number) if math.isfinite(number) and number.is_integer() else 0


def final(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The records of tasks at the run's final round and first sample (records without a
    round or sample count as round 0, sample 0)."""
    tasks = [r for r in records if is_task(r)]
    if not tasks:
        return []
    last = max(level(r, "round") for r in tasks)
    tasks = [r for r in tasks if level(r, "round") == last]
    first = min(level(r, "sample") for r in tasks)
    return [r for r in tasks if level(r, "sample") == first]


def tally(records: Iterable[Mapping[str, Any]], suite: int) -> Tally:
    """The pass rate's counts over a run's records (``suite``: the suite's tasks)."""
    records = list(records)
    counted = final(records)
    attempted = {str(r["task_id"]) for r in counted}
    passed = {str(r["task_id"]) for r in counted if r.get("verdict") == Verdict.PASSED}
    apart = Counter(str(r["verdict"]) for r in records if not is_task(r))
    return Tally(len(attempted), len(passed), suite, dict(sorted(apart.items())))
