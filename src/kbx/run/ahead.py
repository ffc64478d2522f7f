"""Compile stages run ahead of the candidates' GPU jobs, on cores the GPU jobs leave idle.

On a fresh set every candidate's kernels compile, and inside its GPU job that compile holds a job
slot (whose number the GPU's memory bounds) for seconds of CPU.  The scheduler offers each candidate
that has to wait for a job thread here: a worker runs its compile stage (``kbx.sandbox.precompile``)
while earlier candidates hold the GPU, and the stage leaves the kernels in the store its GPU child's
cache is filled from.  A job claims its candidate's stage before it starts: a stage not begun yet is
dropped (the GPU never waits for a stage that has not started; its child compiles as before), a
stage running is waited for (its kernels are seconds from done), a finished one has left its
kernels.  Candidates of one task with the same code share one stage.  No verdict depends on a stage:
its figures go to the record's ``stage_s`` (``ahead``, ``ahead_wait``, ``ahead_bytes``)
(docs/design/throughput.md, Compile ahead).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor

import torch

from kbx.core.candidate import Candidate
from kbx.core.config import EvalConfig
from kbx.sandbox import childenv, precompile
from kbx.sandbox.servers import ForkServers
from kbx.suite import find

Stage = Callable[[Candidate], dict[str, float]]  # one candidate's compile stage: its figures


def key_of(candidate: Candidate) -> str:
    return hashlib.sha256(f"{candidate.task_id}\n{candidate.code}".encode()).hexdigest()


class Ahead:
    """``workers`` compile stages at once, each waited for at most ``wait_s`` by its job."""

    def __init__(self, stage: Stage, workers: int, wait_s: float) -> None:
        self.stage, self.wait_s = stage, wait_s
        self.pool = ThreadPoolExecutor(max(1, workers), thread_name_prefix="kbx-ahead")
        self.stages: dict[str, Future[dict[str, float]]] = {}
        self.lock = threading.Lock()

    def offer(self, candidate: Candidate) -> None:
        """Queue the candidate's compile stage (once per task and code)."""
        if candidate.problem is not None:  # its verdict is decided before any child runs
            return
        key = key_of(candidate)
        with self.lock:
            if key not in self.stages:
                self.stages[key] = self.pool.submit(self.quietly, candidate)

    def quietly(self, candidate: Candidate) -> dict[str, float]:
        """A stage whose failure (kbx's or the candidate's) only leaves its GPU child to compile."""
        try:
            return self.stage(candidate)
        except Exception:  # noqa: BLE001 - nothing depends on the stage
            return {}

    def claim(self, candidate: Candidate) -> dict[str, float]:
        """Before the candidate's GPU job: its stage dropped if not begun, else waited for; the
        figures of what was done (empty: no stage ran for it)."""
        with self.lock:
            future = self.stages.get(key_of(candidate))
        if future is None or future.cancel():
            return {}
        began = time.monotonic()
        try:
            figures = dict(future.result(timeout=self.wait_s))
        except (TimeoutError, CancelledError):
            figures = {}
        figures["ahead_wait"] = round(time.monotonic() - began, 3)
        return figures

    def close(self) -> None:
        """Stages not begun are dropped; running ones end with their children."""
        self.pool.shutdown(wait=False, cancel_futures=True)


def start(
    cfg: EvalConfig, jobs: int, gpus: Sequence[int | None], servers: ForkServers
) -> Ahead | None:
    """A GPU run's compile stages: ``Tuning.compile_ahead`` workers, else one per core the jobs
    leave, at most one per job; None where they are off, or the GPUs differ in their target (a
    stage compiles for one), or the GPUs are not NVIDIA's."""
    workers = cfg.tuning.compile_ahead
    if workers is None:
        workers = max(1, min(jobs, len(os.sched_getaffinity(0)) - jobs))
    if workers == 0 or torch.version.hip:
        return None
    try:
        archs = {torch.cuda.get_device_capability(gpu or 0) for gpu in gpus}
    except (RuntimeError, AssertionError):  # no usable GPU to name a target
        return None
    if len(archs) != 1:
        return None
    major, minor = archs.pop()
    child_cfg = childenv.settings(cfg)

    def stage(candidate: Candidate) -> dict[str, float]:
        task = find(candidate.task_id)
        if task is None:
            return {}
        arch = major * 10 + minor
        return precompile.compile_ahead(task, candidate.code, child_cfg, arch, servers)

    return Ahead(stage, workers, precompile.LIMIT_S + 30)
