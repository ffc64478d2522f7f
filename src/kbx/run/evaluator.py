"""``kbx.Evaluator``: the one public seam for evaluating candidates.

An Evaluator owns a run's processes for its lifetime: the fork servers, the worker processes,
the baseline workers and the caches that make later candidates cheaper.  Open it once, submit
any number of candidates from any thread, close it (a ``with`` block does both):

    with Evaluator(device="cpu") as ev:
        result = ev.evaluate("Activation/relu", code)
        for result in ev.submit(candidates):  # in completion order
            ...

``aevaluate`` and ``asubmit`` are the asyncio forms, for a service.  Where the jobs run is a
``Backend``: this machine's processes (``LocalBackend``) here; a cluster backend fits the same
Protocol.  ``kbx eval``, ``kbx validate``, ``kbx.api`` and the benchmarks all go through it.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Protocol

from kbx.core import trace
from kbx.core.activity import BOARD, Activity
from kbx.core.candidate import Candidate, make
from kbx.core.config import EvalConfig, Tuning, cache_dir
from kbx.core.result import Result
from kbx.gpu.hardware import default_device, device_problem
from kbx.run import rerun, twins
from kbx.run.scheduler import OnBaseline, Scheduler, default_jobs
from kbx.run.workers import Workers

DEFAULT = Path("<default>")  # ``baselines``: the cache in $KBX_CACHE_DIR


class Backend(Protocol):
    """Where candidates run: takes batches, yields each one's results as they finish."""

    def submit(
        self, candidates: Iterable[Candidate], on_baseline: OnBaseline | None = None
    ) -> Iterator[tuple[Candidate, Result]]: ...

    def close(self, cancel: bool = False) -> None: ...


class LocalBackend:
    """This machine: job threads of this process, or with ``procs`` > 1 (by default one per
    GPU when there are several) worker processes, each with job threads of its own."""

    def __init__(self, cfg: EvalConfig, gpus: Sequence[int | None], jobs: int) -> None:
        procs = cfg.tuning.procs or (len(gpus) if cfg.device == "cuda" and len(gpus) > 1 else 1)
        procs = max(1, min(procs, jobs))
        self.runner: Scheduler | Workers
        if procs > 1:
            self.runner = Workers(cfg, jobs, list(gpus), procs)
        else:
            self.runner = Scheduler(cfg, jobs, gpus).start()

    def submit(
        self, candidates: Iterable[Candidate], on_baseline: OnBaseline | None = None
    ) -> Iterator[tuple[Candidate, Result]]:
        return self.runner.submit(candidates, on_baseline)

    def running(self) -> list[Activity]:
        return self.runner.running()

    def close(self, cancel: bool = False) -> None:
        self.runner.close(cancel)


class Evaluator:
    """Evaluates candidates on ``device`` (default: cuda when a GPU is visible) and ``gpus``,
    with timing (``perf``) on the GPU, baselines cached in ``baselines`` (None: measured every
    run), in ``run_dir`` (default: a temporary folder), tuned by ``tuning``.  ``trusted``: the
    candidates are kbx's own (a task's PyTorch reference run as a candidate by ``kbx validate``),
    which need no Triton kernel."""

    def __init__(
        self,
        device: str | None = None,
        *,
        gpus: Sequence[int] | None = None,
        perf: bool = True,
        run_dir: Path | None = None,
        baselines: Path | None = DEFAULT,
        tuning: Tuning | None = None,
        backend: Backend | None = None,
        trusted: bool = False,
    ) -> None:
        device = device or default_device()
        if problem := device_problem(device):
            raise ValueError(problem)
        self.scratch = None if run_dir else Path(tempfile.mkdtemp(prefix="kbx-run-"))
        cache = cache_dir() / "baselines.sqlite" if baselines == DEFAULT else baselines
        self.config = EvalConfig(
            device=device,
            perf=perf,
            run_dir=(run_dir or self.scratch or Path(".")).resolve(),
            baseline_cache=cache,
            tuning=tuning or Tuning(),
            require_triton=not trusted,
        )
        self.gpus: list[int | None] = list(gpus) if gpus else [None]
        gpu_count = len(gpus) if gpus else 1
        self.jobs = self.config.tuning.jobs or default_jobs(device, gpu_count)
        self.backend = backend
        self.memory = twins.Memory()  # results that answer later batches' twins
        self.closed = False
        trace.enable(self.config.tuning.trace)

    def start(self) -> Evaluator:
        """Start the backend's processes (done by the first submission otherwise)."""
        if self.closed:
            raise RuntimeError("this Evaluator is closed: open a new one")
        if self.backend is None:
            self.backend = LocalBackend(self.config, self.gpus, self.jobs)
        return self

    def submit(
        self,
        candidates: Iterable[Candidate | tuple[str, str]],
        on_baseline: OnBaseline | None = None,
    ) -> Iterator[Result]:
        """Each candidate's Result, in completion order (``(task_id, code)`` pairs are read as
        the raw answer of a model, as ``kbx.core.candidate.make`` does)."""
        for _, result in self.pairs(candidates, on_baseline):
            yield result

    def pairs(
        self,
        candidates: Iterable[Candidate | tuple[str, str]],
        on_baseline: OnBaseline | None = None,
    ) -> Iterator[tuple[Candidate, Result]]:
        """As ``submit``, each Result with its candidate.  Candidates of a task with the same
        code are evaluated once, the others answered from the result (``twins``; off with
        ``Tuning.twins``)."""
        backend = self.start().backend
        assert backend is not None
        wanted = (c if isinstance(c, Candidate) else make("<api>", c[0], c[1]) for c in candidates)
        batch = twins.Batch(self.config, self.memory if self.config.tuning.twins else None)
        again: list[tuple[Candidate, Result]] = []
        for candidate, result in backend.submit(batch.firsts(wanted), on_baseline):
            if self.config.tuning.rerun_alone and rerun.suspect(result):
                again.append((candidate, result))  # evaluated alone once the rest are done
            else:
                yield candidate, result
                yield from batch.answered(candidate, result)
            yield from batch.ready()
        yield from batch.ready()
        for candidate, first in again:
            for done, second in backend.submit([candidate], on_baseline):
                final = rerun.mark(second, first)
                yield done, final
                yield from batch.answered(done, final)

    def running(self) -> list[Activity]:
        """What is under way now, the longest-running first: each candidate in flight and the
        step it is at, each task whose baselines are being measured (``kbx.core.activity``;
        this process's own where the backend cannot say)."""
        found = getattr(self.backend, "running", None)
        return list(found()) if callable(found) else BOARD.snapshot()

    def evaluate(self, task_id: str, code: str) -> Result:
        """The Result of one candidate: ``code`` for the task ``task_id``."""
        return next(iter(self.submit([(task_id, code)])))

    async def aevaluate(self, task_id: str, code: str) -> Result:
        """``evaluate`` without blocking the event loop."""
        return await asyncio.to_thread(self.evaluate, task_id, code)

    async def asubmit(
        self, candidates: Iterable[Candidate | tuple[str, str]]
    ) -> AsyncIterator[Result]:
        """``submit`` as an async iterator: results as they finish."""
        results = self.submit(list(candidates))
        done = object()
        while (result := await asyncio.to_thread(next, results, done)) is not done:
            assert isinstance(result, Result)
            yield result

    def close(self, cancel: bool = False) -> None:
        """End the processes (``cancel``: without finishing queued candidates)."""
        self.closed = True
        if self.backend is not None:
            self.backend.close(cancel)
            self.backend = None
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None

    def __enter__(self) -> Evaluator:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(cancel=exc is not None)
