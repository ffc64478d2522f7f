"""A whole evaluation run: read the source, skip what the run folder's store has, evaluate the rest
with an Evaluator, longest tasks first, and export the results.

Longest by this machine's job times where it has them, else on a GPU by the packaged ones
(``durations.json``, measured on one GPU and scaled to this machine's where both know a task):
on a fresh machine a run in suite order ends with its slowest tasks running alone.

Every result is stored as it comes, so a run that stops (Ctrl-C, a crash) resumes where it was
when the same command runs again; ``results.jsonl`` and ``summary.json`` are written at the end,
and also when the run is interrupted.
"""

from __future__ import annotations

import functools
import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbx.core.candidate import Candidate, read_source
from kbx.core.result import Result
from kbx.evaluate.baselines import open_baselines
from kbx.run.scheduler import OnBaseline
from kbx.run.store import Store, export
from kbx.suite import select

if TYPE_CHECKING:
    from kbx.run.evaluator import Evaluator


@dataclass
class RunPlan:
    candidates: list[Candidate]
    todo: list[Candidate]
    suite_size: int


def plan_run(source: Path, store: Store, pattern: str | None, task: str | None = None) -> RunPlan:
    candidates = [c for c in read_source(source, task) if keep(c, pattern)]
    done = store.keys()
    todo = [c for c in candidates if c.key not in done]
    return RunPlan(candidates, todo, len(select(pattern)))


def keep(candidate: Candidate, pattern: str | None) -> bool:
    if pattern is None or candidate.problem:
        return True
    return any(t.id == candidate.task_id for t in select(pattern))


PRIOR = Path(__file__).with_name("durations.json")


@functools.cache
def prior() -> dict[str, float]:
    """The packaged job times (``scripts/prior_durations.py``); none if the file is unreadable."""
    try:
        seconds = json.loads(PRIOR.read_text())["seconds"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return {str(t): float(s) for t, s in seconds.items() if float(s) > 0}


def expected(known: dict[str, float], packaged: dict[str, float] | None = None) -> dict[str, float]:
    """This machine's job times, and for the tasks it has none of, the packaged ones scaled by
    the median ratio of the two over the tasks both have (1 where none)."""
    base = prior() if packaged is None else packaged
    both = [known[t] / base[t] for t in known if base.get(t, 0) > 0]
    scale = statistics.median(both) if both else 1.0
    return {**{t: s * scale for t, s in base.items()}, **known}


def longest_first(todo: list[Candidate], known: dict[str, float]) -> list[Candidate]:
    """Candidates whose task took longest last time on this machine first (a task never timed
    here counts as the median one; ties keep source order): a linear-algebra task can take a
    minute of a job, which at the end of a run would leave the other jobs idle."""
    if not known:
        return todo
    typical = statistics.median(known.values())
    return sorted(todo, key=lambda c: -known.get(c.task_id, typical))


def run_eval(
    source: Path,
    out_dir: Path,
    ev: Evaluator,
    pattern: str | None = None,
    on_start: Callable[[RunPlan], None] | None = None,
    on_result: Callable[[Result], None] | None = None,
    on_baseline: OnBaseline | None = None,
    task: str | None = None,
) -> dict[str, Any]:
    """Evaluate ``source`` into ``out_dir`` with ``ev``; the run's summary.  ``task``: the task
    of a lone ``.py`` (``kbx eval FILE.py --task ID``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(json.dumps(ev.config.record(), indent=2) + "\n")
    store = Store(out_dir / "kbx.sqlite")
    try:
        plan = plan_run(source, store, pattern, task)
        if on_start:
            on_start(plan)
        timed = ev.config.timed
        cache = open_baselines(ev.config.baseline_cache) if timed else None
        known = cache.durations() if cache else {}
        todo = longest_first(plan.todo, expected(known) if ev.config.device == "cuda" else known)
        try:
            for cand, result in ev.pairs(todo, on_baseline):
                store.put(cand.key, dict(result.record(), key=cand.key))
                if cache and result.task_id and "answered_from" not in result.meta:
                    cache.put_duration(result.task_id, result.duration_s)  # a twin took none
                if on_result:
                    on_result(result)
        finally:  # what is done so far, also when interrupted
            keys = {c.key for c in plan.candidates}
            summary = export(store, out_dir, plan.suite_size, keys, ev.config.record())
        return summary
    finally:
        store.close()
