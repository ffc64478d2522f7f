"""A whole evaluation run: read the source, skip what the store has, evaluate the rest in parallel.

``Scheduler`` is the one seam for where jobs execute (threads driving sandboxed children here; a
multi-GPU or Ray backend later): it takes candidates and yields results as they finish.
"""

from __future__ import annotations

import queue
import statistics
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kbx.candidate import Candidate, read_source
from kbx.evaluate import cores, gpuops, gpuwait, perf
from kbx.evaluate.pipeline import EvalConfig, evaluate
from kbx.result import Result
from kbx.store import Store, export
from kbx.suite import select


class Scheduler:
    """``jobs`` candidates in flight, spread round-robin over ``gpus`` (each job slot belongs to
    one GPU; its child sees only that GPU and its timings take that GPU's lock)."""

    def __init__(self, cfg: EvalConfig, jobs: int, gpus: list[int] | None = None) -> None:
        self.cfg, self.jobs = cfg, max(1, jobs)
        choices: list[int | None] = list(gpus) if gpus else [None]
        self.gpus = choices
        self.slots: queue.Queue[int | None] = queue.Queue()
        for i in range(self.jobs):
            self.slots.put(choices[i % len(choices)])

    def evaluate(self, candidate: Candidate) -> Result:
        gpu = self.slots.get()
        try:
            return evaluate(candidate, replace(self.cfg, gpu=gpu))
        finally:
            self.slots.put(gpu)

    def run(self, candidates: Iterable[Candidate]) -> Iterator[tuple[Candidate, Result]]:
        if self.cfg.device.startswith("cuda"):
            # Before any thread: the first operation under a dispatch mode imports torch._dynamo
            # and more, which register operators; on the H200 (torch 2.11) that import, begun by
            # 16 reference threads at once while others dispatched, crashed the process
            # (segfault, 2026-11-30).  The fork server does the same for its children.
            gpuops.preload()
            gpuwait.asleep()  # its threads wait for the GPU without spinning a core each
            cores.reserve(self.gpus)  # a core per GPU for its timing turns, the rest for all else
            for gpu in self.gpus:
                cores.register(replace(self.cfg, gpu=gpu).sandbox().lock, cores.for_gpu(gpu))
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            pending: dict[Future[Result], Candidate] = {}
            for cand in candidates:
                pending[pool.submit(self.evaluate, cand)] = cand
                if len(pending) >= 2 * self.jobs:
                    yield from self.drain(pending, FIRST_COMPLETED)
            while pending:
                yield from self.drain(pending, FIRST_COMPLETED)

    @staticmethod
    def drain(
        pending: dict[Future[Result], Candidate], how: str
    ) -> Iterator[tuple[Candidate, Result]]:
        done, _ = wait(list(pending), return_when=how)
        for fut in done:
            yield pending.pop(fut), fut.result()


@dataclass
class RunPlan:
    candidates: list[Candidate]
    todo: list[Candidate]
    suite_size: int


def plan_run(source: Path, store: Store, pattern: str | None) -> RunPlan:
    candidates = [c for c in read_source(source) if keep(c, pattern)]
    done = store.keys()
    todo = [c for c in candidates if c.key not in done]
    return RunPlan(candidates, todo, len(select(pattern)))


def keep(candidate: Candidate, pattern: str | None) -> bool:
    if pattern is None or candidate.problem:
        return True
    return any(t.id == candidate.task_id for t in select(pattern))


def longest_first(todo: list[Candidate], cache: perf.BaselineCache | None) -> list[Candidate]:
    """Candidates whose task took longest last time on this machine first (a task never timed
    here counts as the median one; ties keep source order): a linear-algebra task can take a
    minute of a job, which at the end of a run would leave the other jobs idle."""
    known = cache.durations() if cache else {}
    if not known:
        return todo
    typical = statistics.median(known.values())
    return sorted(todo, key=lambda c: -known.get(c.task_id, typical))


def run_eval(
    source: Path,
    out_dir: Path,
    cfg: EvalConfig,
    jobs: int,
    pattern: str | None = None,
    on_start: Callable[[RunPlan], None] | None = None,
    on_result: Callable[[Result], None] | None = None,
    gpus: list[int] | None = None,
) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    store = Store(out_dir / "kbx.sqlite")
    try:
        plan = plan_run(source, store, pattern)
        if on_start:
            on_start(plan)
        cache = perf.open_cache(cfg.baseline_cache) if cfg.timed else None
        for cand, result in Scheduler(cfg, jobs, gpus).run(longest_first(plan.todo, cache)):
            store.put(cand.key, dict(result.record(), key=cand.key))
            if cache and result.task_id:
                cache.put_duration(result.task_id, result.duration_s)
            if on_result:
                on_result(result)
        return export(store, out_dir, plan.suite_size, {c.key for c in plan.candidates})
    finally:
        store.close()
