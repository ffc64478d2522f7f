"""Background threads that feed the durable queue to the Evaluators, one per tier profile.

Each thread claims a job, evaluates it through the Evaluator of its tier (opened on first use and
kept for the service's lifetime) and stores the result; a result is cached under the job's
content key unless it is kbx's own fault (``harness_error``), which is never reused.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from kbx.core.candidate import make
from kbx.core.config import Tuning
from kbx.core.result import Result
from kbx.run.evaluator import Evaluator
from kbx.serve.metrics import Metrics
from kbx.serve.queue import Job, Queue
from kbx.serve.tiers import Profile, profile
from kbx.suite.verdict import Verdict

IDLE_S = 0.5  # a thread with nothing to claim looks again after this, or when woken
OpenEvaluator = Callable[[Profile], Evaluator]


class Closable(Protocol):
    def close(self, cancel: bool = False) -> None: ...


class Evaluators:
    """The open Evaluators, by profile; tiers with equal profiles share one."""

    def __init__(
        self, device: str, tuning: Tuning, opener: OpenEvaluator, pool: Closable | None = None
    ) -> None:
        self.device, self.tuning, self.opener, self.pool = device, tuning, opener, pool
        self.open: dict[Profile, Evaluator] = {}
        self.lock = threading.Lock()

    def of(self, tier: str) -> Evaluator:
        wanted = profile(tier, self.device, self.tuning)
        with self.lock:
            if wanted not in self.open:
                self.open[wanted] = self.opener(wanted).start()
            return self.open[wanted]

    def close(self) -> None:
        with self.lock:
            for ev in self.open.values():
                ev.close(cancel=True)
            self.open.clear()
            if self.pool is not None:
                self.pool.close(cancel=True)
                self.pool = None


class Dispatcher:
    """``threads`` jobs in flight, for as long as it runs."""

    def __init__(
        self, queue: Queue, evaluators: Evaluators, metrics: Metrics, threads: int
    ) -> None:
        self.queue, self.evaluators, self.metrics = queue, evaluators, metrics
        self.threads = [
            threading.Thread(target=self.loop, name=f"kbx-serve-{i}", daemon=True)
            for i in range(max(1, threads))
        ]
        self.wakeup = threading.Event()
        self.stopping = threading.Event()

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def wake(self) -> None:
        self.wakeup.set()

    def stop(self) -> None:
        self.stopping.set()
        self.wakeup.set()
        self.evaluators.close()

    def loop(self) -> None:
        while not self.stopping.is_set():
            job = self.queue.claim()
            if job is None:
                self.wakeup.wait(IDLE_S)
                self.wakeup.clear()
                continue
            self.run(job)

    def run(self, job: Job) -> None:
        began = time.monotonic()
        result = self.evaluate(job)
        if self.stopping.is_set():
            return  # a cancelled evaluation: left running, requeued at the next start
        self.metrics.evaluation.labels(job.tier).observe(time.monotonic() - began)
        record = dict(result.record(), tier=job.tier, job_id=job.id)
        fault = result.verdict == Verdict.HARNESS_ERROR
        answered = self.queue.complete(job, record, cache=not fault)
        now = time.time()
        for job_id, accepted_at in answered:
            twin = job_id != job.id
            self.metrics.answered(str(result.verdict), job.tier, twin, now - accepted_at)

    def evaluate(self, job: Job) -> Result:
        """The job's Result; an exception of kbx's own becomes a ``harness_error``."""
        meta = {**job.metadata, "job_id": job.id, "tier": job.tier}
        candidate = make(f"serve:{job.id}", job.task_id, job.code, meta)
        try:
            return next(iter(self.evaluators.of(job.tier).pairs([candidate])))[1]
        except Exception as exc:  # noqa: BLE001  (kbx's fault, never the candidate's)
            device = self.evaluators.device
            detail = f"kbx serve: {type(exc).__name__}: {exc}"
            return Result.of(candidate, device, Verdict.HARNESS_ERROR, detail, "read")
