"""The PyTorch baselines a candidate is timed against: cached, measured in trusted workers, owned.

The baselines, eager and ``torch.compile`` (default mode) of the task's reference, are timed with
the candidates' engine and under the same per-GPU lock, in trusted worker processes kept between
tasks (``compile_pool``, ``baseline_worker``), never in the parent, whose threads share one GIL.
``Baselines`` owns a run's baseline state: the values measured so far, one measurement per task at
a time, the background prefetch, and ``BaselineCache``, which keeps them across runs under a key
of GPU, driver, torch, triton, task id and version, case and kind: a number measured under other
software is never reused (docs/design/timing.md, Baselines).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache
from pathlib import Path
from types import TracebackType

from kbx.core import incidents
from kbx.core.incidents import where
from kbx.gpu import budget, compile_pool, footprint
from kbx.gpu.gpulock import exclusive
from kbx.gpu.gpuops import on_device
from kbx.gpu.hardware import Peaks, fingerprint, load_peaks
from kbx.gpu.placement import Placement
from kbx.sandbox.childenv import SOURCE_ROOT, visible_gpu
from kbx.suite.task import Task

KINDS = ("eager", "compile")
BASELINE_TIMEOUT_S = 900.0  # a task's baselines, torch.compile of every case included
# Baseline measurements started ahead of their candidates' results, each in a worker process of
# its own.  Half the cores: torch.compile is a CPU-bound process; with too few, jobs wait for
# their baselines after their candidates are done, and with too many, the compiles slow
# everything beside them (docs/design/throughput.md, Baselines).  Read when this module is
# imported, before the parent keeps a core per GPU for its timing turns (``cores.Reservation``).
PREFETCH_WORKERS = max(4, len(os.sched_getaffinity(0)) // 2)
# A baseline worker computes on one core: torch.compile's workers (inductor's compile threads) and
# the CPU math of its inputs (float64 draws, factorisations) alike: with torch's default of a
# thread per core in each of many workers, the cores are oversubscribed and the linear-algebra
# tasks' baselines stall (docs/design/throughput.md, Baselines).
ONE_THREAD = {"TORCHINDUCTOR_COMPILE_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

Measured = dict[tuple[int, str], float | None]  # (case index, kind) -> median ms, None: no compile


class NoRoom(RuntimeError):
    """A measurement ahead of need found no room in its GPU's memory budget: left to the job."""


class BaselineCache:
    """Baseline medians (ms) in SQLite; a failed torch.compile is cached as None.  Also each
    task's last job time on this machine (``durations``), for the scheduler's order."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.lock = threading.Lock()
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS baselines (key TEXT PRIMARY KEY, ms REAL)")
        self.db.execute("CREATE TABLE IF NOT EXISTS durations (task TEXT PRIMARY KEY, s REAL)")

    def get(self, key: str) -> tuple[bool, float | None]:
        with self.lock:  # one connection, used by every job thread
            row = self.db.execute("SELECT ms FROM baselines WHERE key = ?", (key,)).fetchone()
        return (row is not None, row[0] if row else None)

    def put(self, key: str, ms: float | None) -> None:
        with self.lock:
            self.db.execute("INSERT OR REPLACE INTO baselines VALUES (?, ?)", (key, ms))

    def durations(self) -> dict[str, float]:
        """Each task's job time (s) in the last run that evaluated it on this machine: the
        scheduler starts the longest first, so that none is left to run alone at the end."""
        with self.lock:
            rows = self.db.execute("SELECT task, s FROM durations").fetchall()
        return {task: s for task, s in rows}

    def clear_baselines(self) -> None:
        """Forget every baseline (a cold run measures them all again); job times stay."""
        with self.lock:
            self.db.execute("DELETE FROM baselines")

    def put_duration(self, task_id: str, seconds: float) -> None:
        with self.lock:
            self.db.execute("INSERT OR REPLACE INTO durations VALUES (?, ?)", (task_id, seconds))

    def close(self) -> None:
        with self.lock:
            self.db.close()


def baseline_key(task: Task, index: int, kind: str) -> str:
    fp = fingerprint("cuda")
    parts = {k: fp[k] for k in ("gpu", "driver", "torch", "triton")}
    parts.update(task=task.id, version=task.version, case=index, kind=kind)
    return json.dumps(parts, sort_keys=True)


def room_for(task: Task, place: Placement, wait: bool = True) -> budget.Grant:
    """A task's baseline measurement in its GPU's memory budget: its work and a worker's
    context as it grows with use (cuBLAS's and cuDNN's workspaces, inductor's kernels), waited
    for (``wait``; else ``NoRoom`` where it does not fit now)."""
    room = budget.on(place.gpu) if place.cuda else budget.UNLIMITED
    need = footprint.used_context(room.context) + footprint.baseline_bytes(task)
    grant = room.reserve(need, f"baselines {task.id}", wait=wait)
    if grant is None:
        raise NoRoom(f"no room on the GPU for the baselines of {task.id} now")
    return grant


def in_worker(
    task: Task,
    wanted: list[tuple[int, str]],
    place: Placement,
    grant: budget.Grant | None = None,
    figures: dict[str, int] | None = None,
) -> tuple[Measured, float]:
    """Measure some (case, kind) pairs of one task in a trusted baseline process
    (``baseline_worker``): a worker of ``compile_pool`` kept between tasks, or, if that worker
    fails to answer, a process of its own; also the CPU seconds the worker reported (0 for a
    process of its own).  Eager too: timed in the parent's threads, its timed calls would share
    one GIL with every job thread's and prefetch's Python (the dispatch mode runs Python for each
    operation), stretching its exclusive holds while every GPU's work waits
    (docs/design/throughput.md, Baselines).  ``grant``: its reservation in the GPU's memory
    budget (``room_for``; None: waited for here); ``figures`` gets the worker's peak of reserved
    GPU memory for the task and what it kept after (``peak_bytes``, ``kept_bytes``)."""
    if grant is None:
        with room_for(task, place) as own:
            return measure_in_worker(task, wanted, place, own, figures)
    return measure_in_worker(task, wanted, place, grant, figures)


def measure_in_worker(
    task: Task,
    wanted: list[tuple[int, str]],
    place: Placement,
    grant: budget.Grant,
    figures: dict[str, int] | None = None,
) -> tuple[Measured, float]:
    """``in_worker`` once its reservation is ``grant`` (a worker started for it keeps a
    context's worth of it as its own)."""
    env = dict(os.environ, PYTHONPATH=SOURCE_ROOT, **ONE_THREAD)
    gpu, core = place.gpu, place.timing_core
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible_gpu(gpu)
    kinds = ",".join(sorted({k for _, k in wanted}))
    cases = ",".join(str(i) for i in sorted({i for i, _ in wanted}))
    request = {"task": task.id, "kinds": kinds, "cases": cases, "lock": place.lock or ""}
    request["core"] = "" if core is None else str(core)  # its timing turns' core (``cores``)
    cpu_s = 0.0
    try:
        reply = compile_pool.POOL.ask(gpu, env, request, BASELINE_TIMEOUT_S, grant)
    except compile_pool.WorkerHeld as exc:
        raise RuntimeError(f"baseline process for {task.id} failed: {exc}") from None
    except compile_pool.WorkerFailed:
        found = compile_once(request, env)
    else:
        if "error" in reply:
            why = f"baseline process for {task.id} failed: {reply['error']}"[:400]
            raise RuntimeError(why + (f" (trace: {reply['log']})" if reply.get("log") else ""))
        found = reply.get("ok") or {}
        cpu_s = float(reply.get("cpu_s") or 0.0)
        if figures is not None:
            figures.update({k: int(reply[k]) for k in ("peak_bytes", "kept_bytes") if k in reply})
    ends = [(i, f"{k}{end}") for i, k in wanted for end in ("_lo", "_hi")]
    got: Measured = {(i, k): found[f"{i}:{k}"] for i, k in wanted}
    got.update({(i, k): found[f"{i}:{k}"] for i, k in ends if f"{i}:{k}" in found})
    return got, cpu_s


def compile_once(request: dict[str, str], env: dict[str, str]) -> dict[str, float | None]:
    """A ``compile_pool`` request answered by a process started for it alone."""
    args = [request.get(k, "") for k in ("task", "kinds", "cases", "lock", "core")]
    cmd = [sys.executable, "-m", "kbx.evaluate.baseline_worker", *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=BASELINE_TIMEOUT_S)
    if proc.returncode != 0:
        tail = " ".join(proc.stderr.strip().splitlines()[-1:])[:300]
        kept = incidents.save(f"baseline-{request['task']}", proc.stderr)
        raise RuntimeError(f"baseline process for {request['task']} failed: {tail}{where(kept)}")
    found: dict[str, float | None] = json.loads(proc.stdout.strip().splitlines()[-1])
    return found


class Baselines:
    """A run's baselines, from memory, else the cache file (``path``; None: no cache across
    runs), else measured in a worker; the GPU's measured peaks, kept next to the cache.  Its
    prefetch threads start at the first ``prefetch`` and end with ``close``.  ``worker_cpu_s``:
    the CPU seconds its workers reported spending (where a cold run's cores went,
    benchmarks/harness_throughput.py); ``waited``, ``spent`` and ``gpu_bytes``: each task's wait
    for room on the GPU, its measurement's wall and CPU seconds, and its worker's peak of
    reserved GPU memory and what it kept after (the baselines stage's log)."""

    def __init__(self, path: Path | None = None, workers: int = PREFETCH_WORKERS) -> None:
        self.cache = BaselineCache(path) if path else None
        self.folder = path.parent if path else None  # where the peaks are kept (``load_peaks``)
        self.workers = workers
        self.worker_cpu_s = 0.0
        self.waited: dict[str, float] = {}  # task -> seconds its last measurement waited for room
        self.spent: dict[str, tuple[float, float]] = {}  # task -> (wall s, worker CPU s)
        self.gpu_bytes: dict[str, dict[str, int]] = {}  # task -> its worker's peak and kept
        self.memory: dict[str, float | None] = {}  # baseline_key -> ms
        self.task_locks: dict[str, threading.Lock] = {}  # one measurement per task at a time
        self.lock = threading.Lock()
        self.pool: ThreadPoolExecutor | None = None
        self.peaks_lock = threading.Lock()
        self.measured_peaks: Peaks | None = None

    def ms(
        self, task: Task, kinds: tuple[str, ...], place: Placement, wait: bool = True
    ) -> Measured:
        """Every baseline of a task: from memory, else the cache, else measured (one process
        for all that are missing; one measurement per task at a time), after waiting for room
        on the GPU (``wait``; else ``NoRoom``) before the task's lock: no thread holds it while
        it waits for room, which a job holding its own reservation could then wait for.  Found
        all in memory or the cache, or once a measurement under way ends, they take no room (a
        job in the baselines stage's tail would otherwise hold room it never uses)."""
        keys = {(i, k): baseline_key(task, i, k) for i in range(len(task.bench)) for k in kinds}
        with self.lock:
            task_lock = self.task_locks.setdefault(task.id, threading.Lock())
        with task_lock:  # a measurement under way (the stage's) ends first, holding no room
            got = self.known(keys)
        if len(got) == len(keys):
            return got
        asked = time.monotonic()
        with room_for(task, place, wait) as grant, task_lock:
            self.waited[task.id] = time.monotonic() - asked
            got = self.known(keys)  # another thread's measurement may have ended meanwhile
            missing = [pair for pair in keys if pair not in got]
            if missing:
                began = time.monotonic()
                figures: dict[str, int] = {}
                measured, cpu_s = in_worker(task, missing, place, grant, figures)
                with self.lock:
                    self.worker_cpu_s += cpu_s
                    self.spent[task.id] = (time.monotonic() - began, cpu_s)
                    self.gpu_bytes[task.id] = figures
                for pair, ms in measured.items():
                    key = keys.get(pair) or baseline_key(task, *pair)  # or an interval's end
                    if self.cache:
                        self.cache.put(key, ms)
                    self.memory[key] = ms
                    if pair in keys:
                        got[pair] = ms
            return got

    def known(self, keys: dict[tuple[int, str], str]) -> Measured:
        """The baselines of ``keys`` found in memory or the cache (kept in memory from then)."""
        got: Measured = {}
        for pair, key in keys.items():
            found, ms = (True, self.memory[key]) if key in self.memory else self.cached(key)
            if found:
                got[pair] = self.memory[key] = ms
        return got

    def missing(self, task: Task, kinds: tuple[str, ...]) -> bool:
        """Whether some baseline of the task is neither in memory nor in the cache (a lookup
        that fails counts as missing: the measurement then says why)."""
        try:
            keys = [baseline_key(task, i, k) for i in range(len(task.bench)) for k in kinds]
            return any(key not in self.memory and not self.cached(key)[0] for key in keys)
        except Exception:  # noqa: BLE001 - measured, and reported there
            return True

    def interval(self, task: Task, index: int, kind: str = "eager") -> list[float] | None:
        """The 95% interval of a baseline's median, where its measurement kept one (from memory
        or the cache; never measured for this: baselines cached before kbx kept intervals have
        none)."""
        ends = []
        for end in ("_lo", "_hi"):
            key = baseline_key(task, index, kind + end)
            found, ms = (True, self.memory[key]) if key in self.memory else self.cached(key)
            if not found or ms is None:
                return None
            ends.append(float(ms))
        return ends

    def cached(self, key: str) -> tuple[bool, float | None]:
        return self.cache.get(key) if self.cache else (False, None)

    def prefetch(self, task: Task, kinds: tuple[str, ...], place: Placement) -> Future[None]:
        """Start a task's baselines (cache lookups, or measurements) in the background while its
        candidate runs: torch.compile's seconds of CPU then overlap the candidate's compiling
        instead of following it (docs/design/throughput.md, Baselines).  ``ms`` later finds them
        in memory, or waits for them under the task's lock; a failure here is left for that later
        call to raise, and so is a measurement that finds no room on the GPU now (it never
        waits for room: the job's own call measures it within the job's reservation)."""
        with self.lock:
            if self.pool is None:
                self.pool = ThreadPoolExecutor(self.workers, thread_name_prefix="kbx-baselines")
            pool = self.pool
        return pool.submit(self.fetch_quietly, task, kinds, place, False)

    def fetch_quietly(
        self, task: Task, kinds: tuple[str, ...], place: Placement, wait: bool = True
    ) -> None:
        """``ms`` on the job's GPU, ahead of the call that needs the numbers: a failure is left
        for that call to raise (and report against the task)."""
        with contextlib.suppress(Exception):
            self.fetch(task, kinds, place, wait)

    def fetch(
        self, task: Task, kinds: tuple[str, ...], place: Placement, wait: bool = True
    ) -> None:
        """``ms`` on ``place``'s GPU, for what it leaves in memory and the cache."""
        with on_device(place.gpu):
            self.ms(task, kinds, place, wait=wait)

    def peaks(self, place: Placement) -> Peaks:
        """This GPU's measured peaks (for the roofline), once (and cached on disk)."""
        with self.peaks_lock:
            if self.measured_peaks is None:
                with exclusive(place.lock, "peaks", place.timing_core):
                    self.measured_peaks = load_peaks(self.folder)
            return self.measured_peaks

    def durations(self) -> dict[str, float]:
        """The cache's job times (``BaselineCache.durations``); none without a cache."""
        return self.cache.durations() if self.cache else {}

    def put_duration(self, task_id: str, seconds: float) -> None:
        if self.cache:
            self.cache.put_duration(task_id, seconds)

    def close(self) -> None:
        """The end of the run: prefetches not begun are dropped, running ones finish (their
        workers go back to ``compile_pool``), the cache closes."""
        with self.lock:
            pool, self.pool = self.pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if self.cache:
            self.cache.close()

    def __enter__(self) -> Baselines:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


_opening = threading.Lock()


def open_baselines(path: Path | None) -> Baselines:
    """The process's ``Baselines`` for a cache file (None: none), made at the first call: a
    bridge for callers that have no run object to hold one yet.  It lives as long as the process
    and is never closed."""
    with _opening:  # two job threads' first calls must not make two
        return _baselines_for(path)


@cache
def _baselines_for(path: Path | None) -> Baselines:
    return Baselines(path)
