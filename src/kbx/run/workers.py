"""Job processes: a run's job slots spread over worker processes, each with its own interpreter
(one GIL), fork server and reference cache, taking candidates from one queue in the run's order.

In one process every job thread shares the parent's interpreter: its children's follow-up, the
loading of their outputs, the reference runs and the judging, so the checks slow down as job threads
are added (docs/design/throughput.md, Worker processes).  With ``procs`` > 1 the scheduler starts
that many workers: job slot i (the slots take the GPUs in turn) goes to worker i % procs, so with
``procs`` a multiple of the GPUs each worker serves one GPU.  The parent keeps what is run-wide: the
reserved timing cores (a worker adopts them), the baselines-first stage, the store.

A worker that dies takes its running candidates with it: each becomes a ``harness_error``; the
others go on with the rest of the queue.  Workers that share a GPU hand their cached GPU memory
back after each candidate: each process keeps its own cached blocks, and without that several
workers run a GPU out of memory (docs/design/throughput.md, Worker processes).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import queue
import subprocess
import threading
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch

from kbx import trace
from kbx.candidate import Candidate
from kbx.evaluate import reference, sandbox
from kbx.evaluate.pipeline import EvalConfig
from kbx.result import Result
from kbx.runtime import cores, forkserver
from kbx.verdict import Verdict

if TYPE_CHECKING:
    from kbx.run.scheduler import Scheduler

MIN_SPARES = 2  # idle spares per worker at least (``spares_each``)
POLL_S = 1.0  # how often the parent looks for workers that died while it waits for results


def slot_gpus(gpus: list[int | None], count: int) -> list[int | None]:
    """The GPU of each of ``count`` job slots: ``gpus`` in turn."""
    return [gpus[i % len(gpus)] for i in range(count)]


def split_slots(gpus: list[int | None], jobs: int, procs: int) -> list[list[int | None]]:
    """Each worker's job slots (their GPUs): slot i takes GPU i % len(gpus) and goes to worker
    i % procs; no worker is left without a slot."""
    slots = slot_gpus(gpus, jobs)
    return [part for w in range(procs) if (part := slots[w::procs])]


class Workers:
    """A run's worker processes, started ahead of its candidates: their imports, preloads and
    fork servers (several seconds each) overlap the parent's own set-up and baselines stage,
    and the candidates follow through ``results``."""

    def __init__(self, sched: Scheduler) -> None:
        self.sched = sched
        parts = split_slots(sched.gpus, sched.jobs, sched.procs)
        cfg = replace(sched.cfg, check_threads=max(1, sched.check_threads() // len(parts)))
        self.device = cfg.device
        reserved = {g: cores.for_gpu(g) for g in sched.gpus}
        env = {  # a GPU's spares and reference look-ahead, shared by the workers on it
            "KBX_SPARES": str(spares_each(cfg.device, sched.gpus, len(parts))),
            "KBX_AHEAD_BYTES": str(ahead_each(sched.gpus, len(parts))),
        }
        ctx = mp.get_context("spawn")  # the parent may have a CUDA context: no fork
        self.todo: Any = ctx.Queue()
        self.done: Any = ctx.Queue()
        self.stopped = False
        # each worker's fork server, started here first: its imports and its spares' contexts
        # need not wait for the worker's own imports (``sandbox.launch_server``)
        servers = [
            sandbox.launch_server(cfg.sandbox(), worker_slots(part), int(env["KBX_SPARES"]))
            for part in parts
        ]
        self.servers = [server[1] for server in servers if server is not None]
        self.procs = [
            ctx.Process(
                target=serve,
                args=(
                    cfg,
                    part,
                    reserved,
                    env,
                    crowded(parts, part),
                    self.todo,
                    self.done,
                    server[0] if server is not None else None,
                ),
                name=f"kbx-worker-{w}",
            )
            for w, (part, server) in enumerate(zip(parts, servers, strict=True))
        ]
        for w in self.procs:
            w.start()
        for server in servers:  # the worker has its copy: the server ends when the worker does
            if server is not None:
                server[0][0].close()

    def results(self, candidates: Iterable[Candidate]) -> Iterator[tuple[Candidate, Result]]:
        """The candidates' results as they finish; the workers end after the last."""
        try:
            todo_list = list(candidates)
            for item in enumerate(todo_list):
                self.todo.put(item)
            trace.mark("parent: candidates queued")
            self.send_stops()  # one per job thread, after every candidate
            yield from collect(todo_list, self.device, self.procs, self.done)
        finally:
            self.stop()

    def send_stops(self) -> None:
        if not self.stopped:
            self.stopped = True
            for _ in range(self.sched.jobs):
                self.todo.put(None)

    def stop(self) -> None:
        """Workers end once their job threads have read a stop (sent here if the run ended
        before its candidates were queued), or are killed after 30 s."""
        self.send_stops()
        for w in self.procs:
            w.join(timeout=30)
            if w.is_alive():
                w.kill()
                w.join()
        for server in self.servers:  # each ends once its worker has gone
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def worker_slots(part: list[int | None]) -> list[int | None]:
    """The GPU of each job slot of the worker serving ``part``, as its scheduler sees them."""
    return slot_gpus(list(dict.fromkeys(part)), len(part))


def crowded(parts: list[list[int | None]], part: list[int | None]) -> bool:
    """Whether another worker has a slot on one of this worker's GPUs."""
    return sum(1 for other in parts if set(other) & set(part)) > 1


def spares_each(device: str, gpus: list[int | None], workers: int) -> int:
    """A worker's idle spares (``KBX_SPARES``): the one-process count shared by the workers of
    a GPU, at least ``MIN_SPARES`` each where there are spares at all: with fewer, most children
    make their own CUDA context (docs/design/throughput.md, Fork server and spares)."""
    total = forkserver.spare_count(device)
    return max(MIN_SPARES, -(-total // per_gpu(gpus, workers))) if total else 0


def ahead_each(gpus: list[int | None], workers: int) -> int:
    """A worker's part of its GPU's bytes of reference outputs computed ahead
    (``reference.AHEAD_GPU_BYTES``, KBX_AHEAD_BYTES)."""
    return reference.ahead_budget() // per_gpu(gpus, workers)


def per_gpu(gpus: list[int | None], workers: int) -> int:
    """The workers that share each GPU (``split_slots`` gives every GPU as many)."""
    return max(1, workers // max(1, len(gpus)))


def collect(
    todo_list: list[Candidate], device: str, workers: list[Any], done: Any
) -> Iterator[tuple[Candidate, Result]]:
    left = set(range(len(todo_list)))
    started: dict[int, int] = {}  # candidate index -> the pid of the worker running it
    while left:
        try:
            kind, index, value = done.get(timeout=POLL_S)
        except queue.Empty:
            yield from lost(todo_list, device, workers, started, left)
            continue
        if kind == "start":
            started[index] = value
        elif index in left:
            left.discard(index)
            yield todo_list[index], value


def lost(
    todo_list: list[Candidate],
    device: str,
    workers: list[Any],
    started: dict[int, int],
    left: set[int],
) -> Iterator[tuple[Candidate, Result]]:
    """Results for the candidates of workers that have died: those they had started, and, once
    none is left alive, all the rest."""
    dead = {w.pid: w.exitcode for w in workers if not w.is_alive()}
    if not dead:
        return
    everyone = len(dead) == len(workers)
    for index in sorted(left):
        pid = started.get(index)
        if pid in dead:
            detail = f"kbx's worker process ended during this candidate (exit code {dead[pid]})"
            stage = "run"
        elif everyone:
            detail, stage = "kbx's worker processes had all ended before this candidate", "read"
        else:
            continue
        left.discard(index)
        yield (
            todo_list[index],
            Result.of(todo_list[index], device, Verdict.HARNESS_ERROR, detail, stage),
        )


def serve(
    cfg: EvalConfig,
    slots: list[int | None],
    reserved: dict[int | None, int | None],
    env: dict[str, str],
    shares_gpu: bool,
    todo: Any,
    done: Any,
    launched: sandbox.Launched | None = None,
) -> None:
    """A worker process: a scheduler over its slots, one thread per slot taking candidates from
    ``todo`` until it reads a stop (``shares_gpu``: another worker has a slot on its GPU;
    ``launched``: the fork server the parent started for it)."""
    os.environ.update(env)
    from kbx.run.scheduler import Scheduler

    trace.mark("worker: imported")
    sched = Scheduler(cfg, len(slots), list(dict.fromkeys(slots)))
    sched.prepare(reserved, launched)
    trace.mark("worker: set up")

    def job_thread() -> None:
        first = True
        while (item := todo.get()) is not None:
            index, candidate = item
            if first:
                trace.mark(f"worker: first candidate of a job thread ({index})")
                first = False
            done.put(("start", index, os.getpid()))
            try:
                result = sched.evaluate(candidate)
            except BaseException as exc:  # noqa: BLE001 - kbx's fault: reported, never raised
                where = traceback.format_exception_only(exc)[-1].strip()
                result = Result.of(
                    candidate, cfg.device, Verdict.HARNESS_ERROR, f"worker: {where}", "run"
                )
            if shares_gpu and cfg.device.startswith("cuda"):
                torch.cuda.empty_cache()  # blocks no tensor uses, back to the GPU for the others
            done.put(("done", index, result))

    threads = [threading.Thread(target=job_thread, name=f"kbx-job-{i}") for i in range(len(slots))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with contextlib.suppress(Exception):
        done.close()
        done.join_thread()  # every result written to the pipe before the process ends
