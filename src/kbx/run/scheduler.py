"""Job threads of one process: candidates in flight on GPU slots, for as long as the scheduler is
open.

A scheduler is started once (``start``: the fork server, CUDA contexts, timing cores) and then
takes any number of batches (``submit``), yielding each batch's results as they finish; ``close``
ends its threads and fork servers.  Each job slot belongs to one GPU: its child sees only that
GPU and its timings take that GPU's lock.  ``kbx.run.workers`` runs several schedulers in worker
processes; ``kbx.run.evaluator`` chooses between the two.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import replace

import torch

from kbx.core import incidents, trace
from kbx.core.activity import BOARD, Activity
from kbx.core.candidate import Candidate
from kbx.core.config import EvalConfig
from kbx.core.result import Result
from kbx.evaluate import pipeline, references
from kbx.evaluate.context import Context
from kbx.gpu import cores, gpuops, gpuwait
from kbx.gpu.placement import Placement
from kbx.run import ahead, memory, servers, stage
from kbx.run.ahead import Ahead
from kbx.run.cancel import kill_children, sigint_ignored
from kbx.run.memory import Cards, Memory
from kbx.run.servers import Launched
from kbx.run.slots import gpu_slots, slot_gpus
from kbx.run.stage import OnBaseline
from kbx.sandbox import childenv, confine
from kbx.sandbox.servers import ForkServers

CHECK_SHARE = 4  # the parent's torch threads: the cores over this (``check_threads``)
# How long a thread holds the GIL while others wait for it (``sys.setswitchinterval``; CPython's
# default is 5 ms): a job thread waits for the GIL after each of its system calls, up to that
# long while another thread computes references (docs/design/throughput.md, GIL switch interval)
SWITCH_S = 0.0005

CANCEL_S = 5.0  # ``close(cancel=True)``: the most it waits for the job threads to end


def default_jobs(device: str, gpus: int = 1) -> int:
    """Children in flight: the cores on the CPU; per GPU enough to hide start-up and compile."""
    count = os.cpu_count() or 1
    return count if device == "cpu" else max(2, min(8, count // 2)) * gpus


def first_spares(slots: Sequence[int | None], spares: int) -> list[int | None]:
    """The job slots the fork server forks a spare for at its start: one per slot, at most
    ``spares`` per GPU (the budget's count: more would hold contexts it has not counted)."""
    seen: Counter[int | None] = Counter()
    first = []
    for gpu in slots:
        if seen[gpu] < spares:
            first.append(gpu)
            seen[gpu] += 1
    return first


class Scheduler:
    """``jobs`` candidates in flight in this process, spread round-robin over ``gpus``."""

    def __init__(self, cfg: EvalConfig, jobs: int, gpus: Sequence[int | None] | None = None):
        self.cfg, self.jobs = cfg, max(1, jobs)
        self.gpus: list[int | None] = list(gpus) if gpus else [None]
        self.slots = gpu_slots(self.gpus, self.jobs)
        self.servers = ForkServers(cfg.tuning.spares)
        self.ctx = Context(self.servers)
        self.cores = cores.Reservation()
        self.pool: ThreadPoolExecutor | None = None
        self.memory: Memory | None = None
        self.ahead: Ahead | None = None  # compile stages ahead of the GPU jobs (cuda)
        self.staging: stage.Progress | None = None  # a baselines stage under way (``behind``)
        self.in_flight = 0  # candidates submitted and not yet evaluated (``queue``)
        self.counting = threading.Lock()

    def place(self, gpu: int | None) -> Placement:
        """Where a job on ``gpu`` puts its GPU work: that GPU's lock, as its jobs' children and
        baseline workers name it, and its timing core."""
        return childenv.settings(self.job(gpu)).place

    def check_threads(self) -> int:
        """The parent's torch threads (one setting per process), for its job threads' CPU math:
        a quarter of the cores by default, not one per core (each job thread that calls an
        operation runs its own team of that many; docs/design/throughput.md, Check threads)."""
        cpus = len(os.sched_getaffinity(0))
        return self.cfg.tuning.check_threads or max(1, cpus // CHECK_SHARE)

    def start(
        self,
        reserved: dict[int | None, int | None] | None = None,
        launched: Launched | None = None,
        cards: Cards | None = None,
        share: int = 1,
    ) -> Scheduler:
        """Set this process up for its jobs; a worker process adopts the parent's ``reserved``
        timing cores instead of reserving its own, the fork server the parent ``launched`` for
        it, and the GPUs' ``cards`` the parent measured, of whose budgets it has a ``share``."""
        sys.setswitchinterval(SWITCH_S)
        confine.open_run_folder(self.cfg.run_dir)
        incidents.open_logs(self.cfg.run_dir)  # before any of its processes starts
        self.pool = ThreadPoolExecutor(self.jobs, thread_name_prefix="kbx-job")
        if not self.cfg.device.startswith("cuda"):
            if self.cfg.tuning.fork_server:
                servers.start_server(self.servers, childenv.settings(self.cfg))
            return self
        gpuwait.asleep()  # its threads wait for the GPU without spinning a core each
        trace.mark("set-up: CUDA driver started")
        self.memory = self.open_memory(cards, share)
        if reserved is None:  # before the fork server starts: it and its children inherit it
            self.cores.reserve(self.gpus)
        else:
            self.cores.adopt(reserved)
        sandbox_cfg = childenv.settings(self.cfg)
        spares = self.servers.spare_count(self.cfg.device)
        first = first_spares(slot_gpus(self.gpus, self.jobs), spares)
        servers.start_server(self.servers, sandbox_cfg, first, launched)
        torch.set_num_threads(self.check_threads())
        self.ahead = ahead.start(self.cfg, self.jobs, self.gpus, self.servers)
        gpuops.begin_loading()
        threading.Thread(target=self.load, daemon=True, name="kbx-load").start()
        return self

    def open_memory(self, cards: Cards | None, share: int) -> Memory:
        """The GPUs' memory budgets in this process: measured here before anything else of the
        run is on the GPU (no ``cards``), or the parent's measurement and this worker's
        ``share``; the spares' count follows from them, and their contexts (and a worker's own)
        are held for the run."""
        if cards is None:
            measured = memory.measure(self.cfg, self.gpus)
        else:  # the parent's measurement of every GPU: this worker's own
            measured = {gpu: card for gpu, card in cards.items() if gpu in self.gpus}
        mem = Memory(self.cfg, measured, share)
        spares = memory.default_spares(self.cfg, measured)
        if spares is not None:
            self.servers.spares = spares
        own = 0 if cards is None else 1  # a worker's context; the parent's was measured
        mem.hold(self.servers.spare_count(self.cfg.device) + own, "spares and own context")
        return mem

    def load(self) -> None:
        """Make this process's CUDA contexts and load what its threads' first checks would
        import (fake tensors: torch._dynamo and some 800 modules, seconds) while its jobs'
        children start: their threads run no torch operation until it is done
        (``gpuops.wait_loaded``)."""
        try:
            for gpu in self.gpus:
                gpuops.make_context(gpu)
            trace.mark("set-up: CUDA contexts made")
            references.preload()  # the judge's output structures; covers ``gpuops.preload`` too
            trace.mark("set-up: dispatch modes loaded")
        finally:
            gpuops.done_loading()

    def job(self, gpu: int | None) -> EvalConfig:
        """The configuration of a job on ``gpu``: its GPU and that GPU's timing core."""
        return replace(self.cfg, gpu=gpu, timing_core=self.cores.for_gpu(gpu))

    def evaluate(self, candidate: Candidate) -> Result:
        """One candidate on the next free slot's GPU, once its compile stage, if one has begun,
        is over (``kbx.run.ahead``)."""
        try:
            figures = self.ahead.claim(candidate) if self.ahead is not None else {}
            gpu = self.slots.get()
            try:
                result = pipeline.evaluate(candidate, self.job(gpu), self.ctx)
            finally:
                self.slots.put(gpu)
        finally:
            with self.counting:
                self.in_flight -= 1
        result.stage_s.update(figures)
        return result

    def queue(self, candidate: Candidate) -> Future[Result]:
        """The candidate's job, and its compile stage where the job will wait for a free job
        thread: one that starts at once compiles in its own child (its stage, begun at the same
        moment, would only make it wait), and the stage workers go to the candidates behind it."""
        assert self.pool is not None
        with self.counting:
            waits = self.in_flight >= self.jobs
            self.in_flight += 1
        if self.ahead is not None and waits:
            self.ahead.offer(candidate)
        return self.pool.submit(self.evaluate, candidate)

    def running(self) -> list[Activity]:
        """This process's candidates in flight and baselines being measured, and where each is
        (``kbx.core.activity``)."""
        return BOARD.snapshot()

    def submit(
        self, candidates: Iterable[Candidate], on_baseline: OnBaseline | None = None
    ) -> Iterator[tuple[Candidate, Result]]:
        """Results as the candidates finish; in a timed run with ``baselines_first``, once every
        task of the baselines stage has begun (``on_baseline`` after each task), the candidates
        whose baselines are done first (``behind``)."""
        if self.pool is None:
            raise RuntimeError("Scheduler.submit before start")
        staged: Future[None] | None = None
        if self.cfg.timed and self.cfg.tuning.baselines_first:
            candidates = list(candidates)
            if self.ahead is not None:  # compiled on the CPU while the baselines are measured
                for cand in candidates:
                    self.ahead.offer(cand)
            staged, candidates = self.behind(candidates, on_baseline)
        pending: dict[Future[Result], Candidate] = {}
        for cand in candidates:
            pending[self.queue(cand)] = cand
            if len(pending) >= 2 * self.jobs:
                yield from drain(pending)
        while pending:
            yield from drain(pending)
        if staged is not None:
            staged.result()  # the stage's own failure (a task's is left to its job)

    def behind(
        self, candidates: list[Candidate], on_baseline: OnBaseline | None
    ) -> tuple[Future[None], list[Candidate]]:
        """The baselines stage begun in a thread of its own, and the candidates in the order
        they may start once its last task has begun: those whose baselines are done (or were
        cached) first, in their order, then those of the tasks still being measured, whose jobs
        would otherwise hold a job thread while they wait for them (``Baselines.ms``)."""
        progress = self.staging = stage.Progress()
        runner = ThreadPoolExecutor(1, thread_name_prefix="kbx-stage-run")
        staged = runner.submit(
            self.baselines, [c.task_id for c in candidates], on_baseline, progress
        )
        staged.add_done_callback(lambda _: trace.mark("parent: baselines stage over"))
        runner.shutdown(wait=False)
        progress.begun_all.wait()
        trace.mark("parent: baselines stage's last task begun")
        if staged.done():
            staged.result()  # a stage that failed as a whole fails the run here
        later = {id(c) for c in candidates if progress.waiting(c.task_id)}
        first = [c for c in candidates if id(c) not in later]
        return staged, first + [c for c in candidates if id(c) in later]

    def baselines(
        self,
        task_ids: list[str],
        on_baseline: OnBaseline | None = None,
        progress: stage.Progress | None = None,
    ) -> None:
        """Measure every baseline these tasks lack (``kbx.run.stage``)."""
        stage.measure(self.cfg, self.gpus, self.place, task_ids, on_baseline, progress)

    def close(self, cancel: bool = False) -> None:
        """End the job threads and the fork servers, and hand the cached GPU memory back: the
        parent keeps its checks' blocks, and the next run in the same process would start with
        its children out of memory.  ``cancel`` (Ctrl-C): queued candidates never start and the
        children in flight are killed, so that their threads end in a second, not when the
        slowest child reaches its time limit; their results are dropped; a baselines stage
        begins no further task."""
        if cancel and self.staging is not None:
            self.staging.cancelled.set()
        if self.ahead is not None:
            self.ahead.close()
            self.ahead = None
        if self.pool is not None:
            self.pool.shutdown(wait=not cancel, cancel_futures=cancel)
            if cancel:
                self.stop_children()
            self.pool = None
        self.ctx.close()
        self.cores.release()
        if self.memory is not None:
            self.memory.close()
            self.memory = None
        if torch.cuda.is_initialized():
            torch.cuda.empty_cache()

    def stop_children(self) -> None:
        """Kill the children in flight until every job thread has given its slot back (at most
        ``CANCEL_S``; a second Ctrl-C meanwhile is ignored: it would leave them running).
        Nothing is forked from then on, and no killed child turns the fork server off with a
        message: a thread whose child dies setting up tries once more, in a fresh interpreter,
        which is killed in turn."""
        self.servers.given_up.setdefault(self.cfg.device, "the run was cancelled")
        end = time.monotonic() + CANCEL_S
        with sigint_ignored():
            while self.slots.qsize() < self.jobs and time.monotonic() < end:
                kill_children([server.pid for server in list(self.servers.servers.values())])
                time.sleep(0.05)


def drain(pending: dict[Future[Result], Candidate]) -> Iterator[tuple[Candidate, Result]]:
    """The results of the candidates that finish next."""
    done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
    for fut in done:
        yield pending.pop(fut), fut.result()
