"""A whole evaluation run: read the source, skip what the store has, evaluate the rest in parallel.

``Scheduler`` is the one seam for where jobs execute (threads driving sandboxed children here; a
multi-GPU or Ray backend later): it takes candidates and yields results as they finish.
"""

from __future__ import annotations

import os
import queue
import statistics
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from kbx import trace
from kbx.candidate import Candidate, read_source
from kbx.evaluate import perf, reference, sandbox
from kbx.evaluate.pipeline import EvalConfig, evaluate
from kbx.result import Result
from kbx.run import workers as procs
from kbx.runtime import cores, gpuops, gpuwait
from kbx.store import Store, export
from kbx.suite import find, select
from kbx.task import Task

CHECK_SHARE = 4  # the parent's torch threads: the cores over this (``check_threads``)
# How long a thread of a job-running process holds the GIL while others wait for it
# (``sys.setswitchinterval``; CPython's default is 5 ms).  A job thread waits for the GIL after
# each of its system calls (its child's folder and files, the request to the fork server, the
# child's messages), up to that long while another thread computes references or imports
# modules; at 5 ms a run's first jobs take seconds to reach their child
# (docs/design/throughput.md, GIL switch interval).
SWITCH_S = 0.0005


class Scheduler:
    """``jobs`` candidates in flight, spread round-robin over ``gpus`` (each job slot belongs to
    one GPU; its child sees only that GPU and its timings take that GPU's lock), driven by
    threads of this process or, with ``procs`` > 1, of that many worker processes
    (``kbx.run.workers``; by default one per GPU: ``default_procs``)."""

    def __init__(
        self,
        cfg: EvalConfig,
        jobs: int,
        gpus: list[int | None] | None = None,
        procs: int | None = None,
    ) -> None:
        self.cfg, self.jobs = cfg, max(1, jobs)
        choices: list[int | None] = list(gpus) if gpus else [None]
        self.gpus = choices
        self.slots = gpu_slots(choices, self.jobs)
        self.procs = max(1, min(procs or default_procs(cfg.device, choices), self.jobs))

    def lock(self, gpu: int | None) -> str | None:
        """The path of ``gpu``'s lock, as its jobs' children and baseline workers name it."""
        return replace(self.cfg, gpu=gpu).sandbox().lock

    def check_threads(self) -> int:
        """The parent's torch threads (one setting per process), for its job threads' CPU math:
        property checks evaluated in float64 at benchmark sizes, which on one thread take tens
        of seconds a task while cores idle (docs/design/throughput.md, Check threads).  A
        quarter of the cores by default, not a thread per core (each job thread that calls an
        operation then runs its own team of that many)."""
        return self.cfg.check_threads or max(1, len(os.sched_getaffinity(0)) // CHECK_SHARE)

    def evaluate(self, candidate: Candidate) -> Result:
        gpu = self.slots.get()
        try:
            return evaluate(candidate, replace(self.cfg, gpu=gpu))
        finally:
            self.slots.put(gpu)

    def run(
        self,
        candidates: Iterable[Candidate],
        on_baseline: Callable[[str, int], None] | None = None,
    ) -> Iterator[tuple[Candidate, Result]]:
        """Results as the candidates finish; with ``cfg.baselines_first``, after every baseline
        their tasks lack has been measured (``on_baseline(task_id, left)`` after each task)."""
        trace.mark("parent: run begins")
        workers = None
        if self.procs > 1:  # started first: their set-up overlaps this process's
            self.reserve()
            workers = procs.Workers(self)
            trace.mark("parent: workers started")
        try:
            self.prepare()
            trace.mark("parent: set up")
            if self.cfg.timed and self.cfg.baselines_first:
                candidates = list(candidates)
                self.baselines([c.task_id for c in candidates], on_baseline)
                trace.mark("parent: baselines stage over")
        except BaseException:
            if workers is not None:
                workers.stop()
            raise
        try:
            if workers is not None:
                yield from workers.results(candidates)
                return
            with ThreadPoolExecutor(max_workers=self.jobs) as pool:
                pending: dict[Future[Result], Candidate] = {}
                for cand in candidates:
                    pending[pool.submit(self.evaluate, cand)] = cand
                    if len(pending) >= 2 * self.jobs:
                        yield from self.drain(pending, FIRST_COMPLETED)
                while pending:
                    yield from self.drain(pending, FIRST_COMPLETED)
        finally:
            release_gpu_memory()

    def prepare(
        self,
        reserved: dict[int | None, int | None] | None = None,
        launched: sandbox.Launched | None = None,
    ) -> None:
        """This process's set-up for jobs on GPUs; a worker process adopts the parent's
        ``reserved`` timing cores instead of reserving its own, and the fork server the parent
        ``launched`` for it."""
        jobs_here = self.procs == 1 or reserved is not None  # not the parent of workers
        if jobs_here:
            sys.setswitchinterval(SWITCH_S)
        if not self.cfg.device.startswith("cuda"):
            return
        if jobs_here:
            sandbox.start_server(
                self.cfg.sandbox(), procs.slot_gpus(self.gpus, self.jobs), launched
            )
        gpuops.use_thread_streams(self.cfg.thread_streams)
        gpuwait.asleep()  # its threads wait for the GPU without spinning a core each
        trace.mark("set-up: CUDA driver started")
        if reserved is None:
            self.reserve()
        else:
            cores.adopt(reserved)
        torch.set_num_threads(self.check_threads())
        for gpu in self.gpus:
            cores.register(self.lock(gpu), cores.for_gpu(gpu))
        if jobs_here:
            gpuops.begin_loading()
            threading.Thread(target=self.load, daemon=True, name="kbx-load").start()

    def load(self) -> None:
        """Make this process's CUDA contexts and load what its threads' first checks would
        import (fake tensors: torch._dynamo and some 800 modules, seconds) while its jobs'
        children start: their threads run no torch operation until it is done
        (``gpuops.wait_loaded``).  Done before the job threads begin, it would hold back the
        first candidates by as long (docs/design/throughput.md, Worker processes)."""
        try:
            for gpu in self.gpus:
                gpuops.make_context(gpu)
            trace.mark("set-up: CUDA contexts made")
            # the judge's output structures (``reference.output_structure``); its import also
            # covers what ``gpuops.preload`` would, where ``LockedOps`` could not opt out
            reference.preload()
            trace.mark("set-up: dispatch modes loaded")
        finally:
            gpuops.done_loading()

    def reserve(self) -> None:
        """A core per GPU for its timing turns, the rest for all else (before any worker
        process starts: it runs on the rest)."""
        cores.reserve(self.gpus)

    def baselines(
        self, task_ids: list[str], on_baseline: Callable[[str, int], None] | None = None
    ) -> None:
        """Measure every baseline these tasks lack (the cache's are kept) before any candidate
        runs, a task per core (or ``cfg.baseline_workers`` per GPU) spread over the GPUs: the
        stage has the cores and the GPU lock to itself, where interleaved with the candidates a
        cold run's baselines, children and checks queue behind each other; hence on by default
        (docs/design/throughput.md, Baselines).  A task
        whose baselines fail here is left to its job, which measures them again and reports
        the error."""
        found = (find(i) for i in dict.fromkeys(task_ids))
        tasks = [t for t in found if t is not None]
        cache = perf.open_cache(self.cfg.baseline_cache)
        per_gpu = self.cfg.baseline_workers or max(
            1, len(os.sched_getaffinity(0)) // len(self.gpus)
        )
        slots = gpu_slots(self.gpus, per_gpu * len(self.gpus))

        def measure(task: Task) -> str:
            gpu = slots.get()
            try:
                perf.fetch_quietly(task, self.cfg.kinds, self.lock(gpu), cache, gpu)
            finally:
                slots.put(gpu)
            return task.id

        with ThreadPoolExecutor(max_workers=per_gpu * len(self.gpus)) as pool:
            futures = [pool.submit(measure, t) for t in tasks]
            for left, fut in enumerate(as_completed(futures), start=1):
                if on_baseline:
                    on_baseline(fut.result(), len(futures) - left)

    @staticmethod
    def drain(
        pending: dict[Future[Result], Candidate], how: str
    ) -> Iterator[tuple[Candidate, Result]]:
        done, _ = wait(list(pending), return_when=how)
        for fut in done:
            yield pending.pop(fut), fut.result()


def release_gpu_memory() -> None:
    """Hand this process's cached GPU memory back once a run is over.  The parent keeps the
    blocks of its checks cached (half a GPU's memory after a warm run), and without this the
    next run in the same process begins with its first children out of memory
    (docs/design/throughput.md, Memory release)."""
    if torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def default_procs(device: str, gpus: Sequence[int | None]) -> int:
    """One worker process per GPU when a run has several, else this process alone: one
    process's job threads share one GIL, and its checks slow down as the jobs grow with the
    GPUs.  Workers that share a GPU give their cached memory back after each candidate
    (``kbx.run.workers``).  Whether one process or a worker per GPU is faster is not settled
    (docs/design/throughput.md, Worker processes)."""
    return len(gpus) if device.startswith("cuda") and len(gpus) > 1 else 1


def gpu_slots(gpus: list[int | None], count: int) -> queue.Queue[int | None]:
    """``count`` slots, each naming one of ``gpus`` in turn: a worker takes one, runs on that GPU
    and gives it back."""
    slots: queue.Queue[int | None] = queue.Queue()
    for gpu in procs.slot_gpus(gpus, count):
        slots.put(gpu)
    return slots


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
    on_baseline: Callable[[str, int], None] | None = None,
    procs: int | None = None,
) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    store = Store(out_dir / "kbx.sqlite")
    try:
        plan = plan_run(source, store, pattern)
        if on_start:
            on_start(plan)
        cache = perf.open_cache(cfg.baseline_cache) if cfg.timed else None
        todo = longest_first(plan.todo, cache)
        for cand, result in Scheduler(cfg, jobs, list(gpus) if gpus else None, procs).run(
            todo, on_baseline
        ):
            store.put(cand.key, dict(result.record(), key=cand.key))
            if cache and result.task_id:
                cache.put_duration(result.task_id, result.duration_s)
            if on_result:
                on_result(result)
        return export(store, out_dir, plan.suite_size, {c.key for c in plan.candidates})
    finally:
        store.close()
