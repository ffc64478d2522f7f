"""Job processes: a run's job slots spread over worker processes, each with its own interpreter
(one GIL), fork server and reference cache, handed candidates by the parent in the run's order.

In one process every job thread shares the parent's interpreter: its children's follow-up, the
loading of their outputs, the reference runs and the judging, so the checks slow down as job
threads are added (docs/design/throughput.md, Worker processes).  With ``Tuning.procs`` > 1 the
evaluator starts that many workers: job slot i (the slots take the GPUs in turn) goes to worker
i % procs, so with ``procs`` a multiple of the GPUs each worker serves one GPU.  The parent keeps
what is run-wide: the reserved timing cores (a worker adopts them), the baselines-first stage.

Each worker has its own queues, in and out, and the parent hands it a candidate only when one of
its slots is free: a worker killed while it holds a queue's cross-process lock (a job thread
waiting in ``get``, a feeder thread in ``put``) blocks no other worker.  A worker that dies takes
its running candidates with it: each becomes a ``harness_error``; those it had not started go to
the others, which go on with the rest.  Workers that share a GPU hand their cached GPU memory
back after each candidate: each process keeps its own cached blocks, and without that several
workers run a GPU out of memory (docs/design/throughput.md, Worker processes).
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import multiprocessing as mp
import os
import queue
import signal
import subprocess
import threading
import traceback
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import torch

from kbx.core import incidents, trace
from kbx.core.activity import BOARD, Activity
from kbx.core.candidate import Candidate
from kbx.core.config import EvalConfig
from kbx.core.result import Result
from kbx.gpu import gpuwait
from kbx.run import memory, servers
from kbx.run.memory import Cards, Memory
from kbx.run.scheduler import CANCEL_S, OnBaseline, Scheduler, first_spares, slot_gpus
from kbx.sandbox import childenv
from kbx.sandbox.servers import ForkServers
from kbx.sandbox.servers import spare_count as fork_spares
from kbx.suite.verdict import Verdict

MIN_SPARES = 2  # idle spares per worker at least (``spares_each``)
POLL_S = 1.0  # how often the parent looks for workers that died while it waits for results
ACTIVITY_S = 2.0  # how often a worker tells the parent what it is working on


def split_slots(gpus: list[int | None], jobs: int, procs: int) -> list[list[int | None]]:
    """Each worker's job slots (their GPUs): slot i takes GPU i % len(gpus) and goes to worker
    i % procs; no worker is left without a slot."""
    slots = slot_gpus(gpus, jobs)
    return [part for w in range(procs) if (part := slots[w::procs])]


class Workers:
    """A run's worker processes, started ahead of its candidates: their imports, preloads and
    fork servers (seconds each) overlap the parent's own set-up and baselines stage.  Batches
    follow through ``submit``, from any thread; ``close`` ends the workers."""

    def __init__(self, cfg: EvalConfig, jobs: int, gpus: list[int | None], procs: int) -> None:
        self.parent = Scheduler(cfg, 1, gpus)  # run-wide: timing cores, the baselines stage
        self.gpus, self.jobs = gpus, jobs
        incidents.open_logs(cfg.run_dir)  # before the fork servers start
        parts = split_slots(gpus, jobs, procs)
        cards = self.measure(cfg, gpus)
        spares = spares_each(cfg, gpus, len(parts), memory.default_spares(cfg, cards))
        share = per_gpu(gpus, len(parts))
        self.parent.memory = Memory(cfg, cards)  # the workers' contexts and spares held in it
        self.parent.memory.hold(share * (1 + spares), "the workers' contexts and spares")
        self.cfg = cfg.tuned(
            check_threads=max(1, self.parent.check_threads() // len(parts)),
            spares=spares,
            ahead_bytes=cfg.tuning.ahead_bytes // per_gpu(gpus, len(parts)),
        )
        if cfg.device.startswith("cuda"):  # as ``Scheduler.start``: the CPU times nothing
            self.parent.cores.reserve(gpus)  # before any worker starts: it runs on the rest
        reserved = {g: self.parent.cores.for_gpu(g) for g in gpus}
        ctx = mp.get_context("spawn")  # the parent may have a CUDA context: no fork
        self.todos: list[Any] = [ctx.Queue() for _ in parts]  # each worker's own, in and out
        self.dones: list[Any] = [ctx.Queue() for _ in parts]
        for todo in self.todos:  # a dead worker's unread candidates never block the parent's exit
            todo.cancel_join_thread()
        self.over = threading.Event()
        self.waiting: dict[int, tuple[queue.Queue[tuple[int, Result]], Candidate]] = {}
        self.pending: collections.deque[tuple[int, Candidate]] = collections.deque()
        self.slots = [len(part) for part in parts]
        self.handed: dict[int, int] = {}  # candidate number -> the worker it was handed to
        self.started: dict[int, int] = {}  # candidate number -> the pid of the worker running it
        self.ready: set[int] = set()  # the workers whose job threads have started
        self.activity: dict[int, list[Activity]] = {}  # each worker's, as it last said
        self.numbers = itertools.count()
        self.lock = threading.Lock()
        launched = [self.launch(part, spares) for part in parts]
        self.servers = [server[1] for server in launched if server is not None]
        adopt = [server[0] if server is not None else None for server in launched]
        self.logs = [incidents.log_file(f"worker-{w}") for w in range(len(parts))]
        self.procs = [
            ctx.Process(
                target=serve,
                args=(self.cfg, part, reserved, crowded(parts, part), self.todos[w], self.dones[w]),
                kwargs={"launched": ls, "cards": cards, "share": share, "log": log},
                name=f"kbx-worker-{w}",
            )
            for w, (part, ls, log) in enumerate(zip(parts, adopt, self.logs, strict=True))
        ]
        for w in self.procs:
            w.start()
        for server in launched:  # the worker has its copy: the server ends when the worker does
            if server is not None:
                server[0][0].close()
        for i in range(len(parts)):
            reader = threading.Thread(target=self.route, args=(i,), name="kbx-results")
            reader.daemon = True
            reader.start()

    @staticmethod
    def measure(cfg: EvalConfig, gpus: list[int | None]) -> Cards:
        """The GPUs' cards, measured here before any worker or fork server is on them (none
        where nothing is timed or without CUDA)."""
        if not cfg.device.startswith("cuda"):
            return {}
        gpuwait.asleep()  # before this process's contexts are made
        return memory.measure(cfg, gpus)

    def launch(
        self, part: list[int | None], spares: int
    ) -> tuple[servers.Launched, subprocess.Popen[bytes]] | None:
        """A worker's fork server, started here first: its imports and its spares' contexts need
        not wait for the worker's own imports."""
        pool = ForkServers(spares)
        first = first_spares(worker_slots(part), spares)
        return servers.launch_server(pool, childenv.settings(self.cfg), first, spares)

    def submit(
        self, candidates: Iterable[Candidate], on_baseline: OnBaseline | None = None
    ) -> Iterator[tuple[Candidate, Result]]:
        """The candidates' results as they finish (after the baselines stage, as in
        ``Scheduler.submit``)."""
        todo = list(candidates)
        if self.cfg.timed and self.cfg.tuning.baselines_first:
            self.parent.baselines([c.task_id for c in todo], on_baseline)
        answers: queue.Queue[tuple[int, Result]] = queue.Queue()
        numbered = {}
        with self.lock:
            for cand in todo:
                number = next(self.numbers)
                numbered[number] = cand
                self.waiting[number] = (answers, cand)
                self.pending.append((number, cand))
            self.hand_out()
        trace.mark("parent: candidates queued")
        while numbered:
            try:
                number, result = answers.get(timeout=POLL_S)
            except queue.Empty:
                self.lost()
                continue
            yield numbered.pop(number), result

    def hand_out(self) -> None:
        """Candidates from the front of ``pending`` to the live workers with a free slot (with
        ``lock`` held)."""
        for w, proc in enumerate(self.procs):
            busy = sum(1 for worker in self.handed.values() if worker == w)
            while self.pending and busy < self.slots[w] and proc.is_alive():
                number, cand = self.pending.popleft()
                self.handed[number] = w
                self.todos[w].put((number, cand))
                busy += 1

    def route(self, w: int) -> None:
        """Hand each result from worker ``w`` to the batch that waits for it, and the worker its
        next candidate, until ``close``."""
        done = self.dones[w]
        while not self.over.is_set():
            try:
                kind, number, value = done.get(timeout=POLL_S)
            except queue.Empty:
                continue
            except (EOFError, OSError, ValueError):
                return
            with self.lock:
                if kind == "ready":
                    self.ready.add(w)
                elif kind == "start":
                    self.started[number] = value
                elif kind == "activity":
                    self.activity[number] = [Activity(*fields) for fields in value]
                elif number in self.waiting:
                    self.started.pop(number, None)
                    self.handed.pop(number, None)
                    self.waiting.pop(number)[0].put((number, value))
                    self.hand_out()

    def running(self) -> list[Activity]:
        """What the parent (the baselines stage) and the live workers are working on."""
        alive = {w.pid for w in self.procs if w.is_alive()}
        with self.lock:
            remote = [a for pid, acts in self.activity.items() if pid in alive for a in acts]
        return sorted(BOARD.snapshot() + remote, key=lambda a: a.started)

    def lost(self) -> None:
        """Results for the candidates of workers that have died: those they had started, and,
        once none is left alive, all the rest; those handed to a dead worker that it had not
        started go back to the front of ``pending``."""
        dead = {w.pid: w.exitcode for w in self.procs if not w.is_alive()}
        if not dead:
            return
        everyone = len(dead) == len(self.procs)
        logs = {w.pid: log for w, log in zip(self.procs, self.logs, strict=True)}
        gone = {i for i, w in enumerate(self.procs) if w.pid in dead}
        with self.lock:
            back = [n for n, w in self.handed.items() if w in gone and n not in self.started]
            for number in sorted(back, reverse=True):
                del self.handed[number]
                self.pending.appendleft((number, self.waiting[number][1]))
            if everyone:
                self.pending.clear()
            else:
                self.hand_out()
            for number in sorted(self.waiting):
                pid = self.started.get(number)
                if pid in dead:
                    why = f"kbx's worker process ended during this candidate (exit {dead[pid]})"
                    why += f" (its log: {logs[pid]})" if logs.get(pid) else ""
                elif everyone:
                    why = "kbx's worker processes had all ended before this candidate"
                else:
                    continue
                answers, cand = self.waiting.pop(number)
                self.handed.pop(number, None)
                stage = "run" if pid in dead else "read"
                result = Result.of(cand, self.cfg.device, Verdict.HARNESS_ERROR, why, stage)
                answers.put((number, result))

    def close(self, cancel: bool = False) -> None:
        """Workers end once their job threads have read a stop, or are killed after 30 s.  With
        ``cancel`` (Ctrl-C) each is told to stop at once (SIGTERM: it kills its children in
        flight, ``cancelled``) and killed if it has not within ``CANCEL_S``."""
        for todo, slots in zip(self.todos, self.slots, strict=True):
            for _ in range(slots):
                todo.put(None)
        if cancel:
            for w in self.procs:
                w.terminate()
        for w in self.procs:
            w.join(timeout=CANCEL_S + 1 if cancel else 30)
            if w.is_alive():
                w.kill()
                w.join()
        for server in self.servers:  # each ends once its worker has gone
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        self.over.set()  # the result readers end within POLL_S
        self.parent.close(cancel)


def cancelled(sched: Scheduler) -> None:
    """A worker told to stop (the run was cancelled): its children in flight killed, it ends."""
    with contextlib.suppress(Exception):
        sched.stop_children()
    os._exit(143)


def tell_activity(done: Any, over: threading.Event) -> None:
    """Every ``ACTIVITY_S`` until ``over``: what this worker is working on, to the parent
    (``Workers.running``), when it has changed."""
    said: list[tuple[str, str, float, float]] = []
    while not over.wait(ACTIVITY_S):
        now = [(a.label, a.step, a.started, a.since) for a in BOARD.snapshot()]
        if now != said:
            done.put(("activity", os.getpid(), now))
            said = now


def worker_slots(part: list[int | None]) -> list[int | None]:
    """The GPU of each job slot of the worker serving ``part``, as its scheduler sees them."""
    return slot_gpus(list(dict.fromkeys(part)), len(part))


def crowded(parts: list[list[int | None]], part: list[int | None]) -> bool:
    """Whether another worker has a slot on one of this worker's GPUs."""
    return sum(1 for other in parts if set(other) & set(part)) > 1


def spares_each(
    cfg: EvalConfig, gpus: list[int | None], workers: int, spares: int | None = None
) -> int:
    """A worker's idle spares: the one-process count (``spares``, the budget's; else the
    tuning's or the device's) shared by the workers of a GPU, at least ``MIN_SPARES`` each where
    there are spares at all (with fewer, most children make their own CUDA context;
    docs/design/throughput.md, Fork server and spares)."""
    total = spares if spares is not None else fork_spares(cfg.device, cfg.tuning.spares)
    return max(MIN_SPARES, -(-total // per_gpu(gpus, workers))) if total else 0


def per_gpu(gpus: list[int | None], workers: int) -> int:
    """The workers that share each GPU (``split_slots`` gives every GPU as many)."""
    return max(1, workers // max(1, len(gpus)))


def serve(
    cfg: EvalConfig,
    slots: list[int | None],
    reserved: dict[int | None, int | None],
    shares_gpu: bool,
    todo: Any,
    done: Any,
    launched: servers.Launched | None = None,
    cards: Cards | None = None,
    share: int = 1,
    log: Path | None = None,
) -> None:
    """A worker process: a scheduler over its slots, one thread per slot taking candidates from
    ``todo`` until it reads a stop (``shares_gpu``: another worker has a slot on its GPU;
    ``launched``: the fork server the parent started for it; ``cards``: the GPUs the parent
    measured, of whose budgets this worker has a ``share``; ``log``: where its own stdout and
    stderr go, never the terminal)."""
    incidents.to_log(log)
    trace.enable(cfg.tuning.trace)
    trace.mark("worker: imported")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the parent's to handle
    sched = Scheduler(cfg, len(slots), list(dict.fromkeys(slots)))
    sched.start(reserved, launched, cards or {}, share)
    signal.signal(signal.SIGTERM, lambda signum, frame: cancelled(sched))
    trace.mark("worker: set up")

    def job_thread() -> None:
        while (item := todo.get()) is not None:
            number, candidate = item
            done.put(("start", number, os.getpid()))
            try:
                result = sched.evaluate(candidate)
            except BaseException as exc:  # noqa: BLE001 - kbx's fault: reported, never raised
                where = traceback.format_exception_only(exc)[-1].strip()
                result = Result.of(
                    candidate, cfg.device, Verdict.HARNESS_ERROR, f"worker: {where}", "run"
                )
            if shares_gpu and cfg.device.startswith("cuda"):
                torch.cuda.empty_cache()  # blocks no tensor uses, back to the GPU for the others
            done.put(("done", number, result))

    threads = [threading.Thread(target=job_thread, name=f"kbx-job-{i}") for i in range(len(slots))]
    for t in threads:
        t.start()
    done.put(("ready", os.getpid(), None))
    over = threading.Event()
    threading.Thread(target=tell_activity, args=(done, over), daemon=True).start()
    for t in threads:
        t.join()
    over.set()
    sched.close()
    with contextlib.suppress(Exception):
        done.close()
        done.join_thread()  # every result written to the pipe before the process ends
