"""Trusted side of performance: PyTorch baselines timed on the same GPU, in the same run.

The candidate's benchmark cases are timed in its child (``benchtime.time_bench``); the baselines,
PyTorch eager and ``torch.compile`` (default mode) of the task's reference, are timed with the
same engine and under the same per-GPU lock, both in trusted worker processes kept between tasks
(``compile_pool``, ``baseline.py``), never in the parent, whose threads share one GIL.  They are
cached in memory for the run and, with ``BaselineCache``, across runs, keyed by GPU, driver, torch,
triton, task id and version, case and baseline kind: a number measured under other software is
never reused.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

from kbx.evaluate.benchtime import suspect
from kbx.evaluate.sandbox import KBX_PATH, visible_gpu
from kbx.hardware import Peaks, fingerprint, load_peaks
from kbx.result import CaseTiming, geometric_mean
from kbx.runtime import compile_pool, cores
from kbx.runtime.gpulock import exclusive
from kbx.runtime.gpuops import on_device
from kbx.task import Task
from kbx.verdict import Reject, Verdict

KINDS = ("eager", "compile")
_memory: dict[str, float | None] = {}
_lock = threading.Lock()
_task_locks: dict[str, threading.Lock] = {}
FLOOR_SLACK = 1.25  # a case faster than floor / FLOOR_SLACK is too_fast (see roofline)
BASELINE_TIMEOUT_S = 900.0  # a task's baselines, torch.compile of every case included


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


@cache
def open_cache(path: Path | None) -> BaselineCache | None:
    return BaselineCache(path) if path else None


def baseline_key(task: Task, index: int, kind: str) -> str:
    fp = fingerprint("cuda")
    parts = {k: fp[k] for k in ("gpu", "driver", "torch", "triton")}
    parts.update(task=task.id, version=task.version, case=index, kind=kind)
    return json.dumps(parts, sort_keys=True)


# A baseline worker computes on one core: torch.compile's workers (inductor's compile threads) and
# the CPU math of its inputs (float64 draws, factorisations) alike: with torch's default of a
# thread per core in each of many workers, the cores are oversubscribed and the linear-algebra
# tasks' baselines stall (docs/design/throughput.md, Baselines).
ONE_THREAD = {"TORCHINDUCTOR_COMPILE_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def in_worker(
    task: Task, wanted: list[tuple[int, str]], lock_path: str | None, gpu: int | None
) -> dict[tuple[int, str], float | None]:
    """Measure some (case, kind) pairs of one task in a trusted baseline process
    (``baseline.py``): a worker of ``compile_pool`` kept between tasks, or, if that worker fails
    to answer, a process of its own.  Eager too: timed in the parent's threads, its timed calls
    would share one GIL with every job thread's and prefetch's Python (the dispatch mode runs
    Python for each operation), stretching its exclusive holds while every GPU's work waits
    (docs/design/throughput.md, Baselines)."""
    env = dict(os.environ, PYTHONPATH=KBX_PATH, **ONE_THREAD)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible_gpu(gpu)
    kinds = ",".join(sorted({k for _, k in wanted}))
    cases = ",".join(str(i) for i in sorted({i for i, _ in wanted}))
    request = {"task": task.id, "kinds": kinds, "cases": cases, "lock": lock_path or ""}
    core = cores.for_gpu(gpu)
    request["core"] = "" if core is None else str(core)  # its timing turns' core (``cores``)
    try:
        reply = compile_pool.POOL.ask(gpu, env, request, BASELINE_TIMEOUT_S)
    except compile_pool.WorkerFailed:
        found = compile_once(request, env)
    else:
        if "error" in reply:
            raise RuntimeError(f"baseline process for {task.id} failed: {reply['error']}"[:400])
        found = reply.get("ok") or {}
        with _lock:
            WORKER_CPU_S[0] += float(reply.get("cpu_s") or 0.0)
    return {(i, k): found[f"{i}:{k}"] for i, k in wanted}


# CPU seconds the baseline workers reported spending on requests of this process, in all
# (diagnostics: where a cold run's cores went, benchmarks/harness_throughput.py)
WORKER_CPU_S = [0.0]


def compile_once(request: dict[str, str], env: dict[str, str]) -> dict[str, float | None]:
    """A ``compile_pool`` request answered by a process started for it alone."""
    args = [request.get(k, "") for k in ("task", "kinds", "cases", "lock", "core")]
    cmd = [sys.executable, "-m", "kbx.evaluate.baseline", *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=BASELINE_TIMEOUT_S)
    if proc.returncode != 0:
        tail = " ".join(proc.stderr.strip().splitlines()[-1:])[:300]
        raise RuntimeError(f"baseline process for {request['task']} failed: {tail}")
    found: dict[str, float | None] = json.loads(proc.stdout.strip().splitlines()[-1])
    return found


def baseline_ms(
    task: Task,
    kinds: tuple[str, ...],
    lock_path: str | None,
    cache: BaselineCache | None,
    gpu: int | None = None,
) -> dict[tuple[int, str], float | None]:
    """Every baseline of a task: from memory, else the cache, else measured (one process for
    all that are missing; one measurement per task at a time)."""
    with _lock:
        task_lock = _task_locks.setdefault(task.id, threading.Lock())
    with task_lock:
        keys = {(i, k): baseline_key(task, i, k) for i in range(len(task.bench)) for k in kinds}
        got: dict[tuple[int, str], float | None] = {}
        for pair, key in keys.items():
            found, ms = (True, _memory[key]) if key in _memory else cache_get(cache, key)
            if found:
                got[pair] = _memory[key] = ms
        missing = [pair for pair in keys if pair not in got]
        if missing:
            for pair, ms in in_worker(task, missing, lock_path, gpu).items():
                if cache:
                    cache.put(keys[pair], ms)
                got[pair] = _memory[keys[pair]] = ms
        return got


# Baseline measurements started ahead of their candidates' results, each in a worker process of
# its own.  Half the cores: torch.compile is a CPU-bound process; with too few, jobs wait for
# their baselines after their candidates are done, and with too many, the compiles slow
# everything beside them (docs/design/throughput.md, Baselines).
PREFETCH_WORKERS = max(4, len(os.sched_getaffinity(0)) // 2)
_prefetcher = ThreadPoolExecutor(PREFETCH_WORKERS, thread_name_prefix="kbx-baselines")


def prefetch(
    task: Task,
    kinds: tuple[str, ...],
    lock_path: str | None,
    cache: BaselineCache | None,
    gpu: int | None = None,
) -> Future[Any]:
    """Start a task's baselines (cache lookups, or measurements) in the background while its
    candidate runs: torch.compile's seconds of CPU then overlap the candidate's compiling instead of
    following it (docs/design/throughput.md, Baselines).  ``speedups`` later finds them in memory,
    or waits for them under the task's lock; a failure here is left for that later call to raise."""
    return _prefetcher.submit(fetch_quietly, task, kinds, lock_path, cache, gpu)


def fetch_quietly(
    task: Task,
    kinds: tuple[str, ...],
    lock_path: str | None,
    cache: BaselineCache | None,
    gpu: int | None = None,
) -> None:
    """``baseline_ms`` on the job's GPU, ahead of the call that needs the numbers: a failure is
    left for that call to raise (and report against the task)."""
    with on_device(gpu), contextlib.suppress(Exception):
        baseline_ms(task, kinds, lock_path, cache, gpu)


def cache_get(cache: BaselineCache | None, key: str) -> tuple[bool, float | None]:
    return cache.get(key) if cache else (False, None)


_peaks: dict[str, Peaks] = {}


def peaks(cache_dir: Path | None, lock_path: str | None) -> Peaks:
    """This GPU's measured peaks, once per process (and cached on disk)."""
    with _lock:
        key = str(cache_dir)
        if key not in _peaks:
            with exclusive(lock_path, "peaks"):
                _peaks[key] = load_peaks(cache_dir)
        return _peaks[key]


def roofline(task: Task, index: int, kernel_ms: float, limits: Peaks) -> dict[str, float]:
    """Achieved throughput of a case, and ``too_fast`` below the physical floor.  The floor comes
    from a device copy, which some streaming kernels beat by a few percent
    (docs/design/throughput.md, Baselines), hence FLOOR_SLACK; a cheat
    that skips its work lands many times below the floor anyway."""
    case = task.bench[index]
    flops, moved = task.flops(case), task.bytes_moved(case)
    floor = limits.floor_ms(moved, flops)
    if kernel_ms < floor / FLOOR_SLACK:
        raise Reject(
            Verdict.TOO_FAST,
            f"bench {index} ({case.label()}): {kernel_ms:.4g} ms is "
            f"below this GPU's floor of {floor:.4g} ms for {moved:.3g} B and {flops:.3g} "
            "FLOP: not a real speedup",
        )
    return {
        "floor_ms": floor,
        "achieved_gbs": moved / (kernel_ms * 1e-3) / 1e9,
        "achieved_tflops": flops / (kernel_ms * 1e-3) / 1e12,
    }


def reused(
    task: Task, index: int, kernel_ms: float, fresh_ms: float, seen_ms: float | None = None
) -> None:
    """``too_fast`` when the timed calls, which repeat contents the candidate has seen, ran far
    faster than calls on contents it had never seen (``benchtime.time_case``'s probe), and so
    did the calls on seen contents made beside those (``seen_ms``, when reported: a stall that
    slowed the probe slows them too): an honest kernel does the same work on both, a result
    cache keyed on contents does not."""
    if suspect(kernel_ms, fresh_ms, seen_ms):
        raise Reject(
            Verdict.TOO_FAST,
            f"bench {index} ({task.bench[index].label()}): {kernel_ms:.4g} ms on inputs it had "
            f"seen before, {fresh_ms:.4g} ms on new ones: results reused, not computed",
        )


def speedups(
    task: Task,
    timings: list[dict[str, Any]],
    lock_path: str | None,
    cache: BaselineCache | None = None,
    with_compile: bool = True,
    limits: Peaks | None = None,
    gpu: int | None = None,
) -> tuple[list[CaseTiming], float, float | None]:
    """Per-case timings against the baselines and geometric-mean speedups (vs eager, vs
    torch.compile when it works on every case); every case must count."""
    if len(timings) != len(task.bench):
        raise Reject(Verdict.CRASHED, f"timed {len(timings)} of {len(task.bench)} benchmark cases")
    base = baseline_ms(task, KINDS if with_compile else ("eager",), lock_path, cache, gpu)
    cases = []
    for i, (case, t) in enumerate(zip(task.bench, timings, strict=True)):
        if (
            not isinstance(t, dict)
            or not all(
                t.get(k) is None or isinstance(t[k], int | float)
                for k in ("median_ms", "reps", "profiler_ms")
            )
            or not isinstance(t.get("fresh_ms"), int | float)
        ):  # only candidate code in the child could have written this
            raise Reject(Verdict.FORBIDDEN, f"bench {i}: malformed timing report {str(t)[:80]}")
        kernel_ms = float(t.get("median_ms", 0.0))
        if not kernel_ms > 0:
            raise Reject(Verdict.CRASHED, f"bench {i}: no valid timing")
        eager, compiled = base[(i, "eager")], base.get((i, "compile"))
        assert eager is not None
        seen = t.get("seen_ms")
        seen_ms = float(seen) if isinstance(seen, int | float) else None
        reused(task, i, kernel_ms, float(t["fresh_ms"]), seen_ms)
        extra: dict[str, Any] = roofline(task, i, kernel_ms, limits) if limits else {}
        extra["fresh_ms"], extra["seen_ms"] = float(t["fresh_ms"]), seen_ms
        if t.get("profiler_ms") is not None:
            extra["profiler_ms"] = float(t["profiler_ms"])
        phases = t.get("phases_ms")  # the child's claim, kept for diagnosis only
        if isinstance(phases, dict) and all(isinstance(v, int | float) for v in phases.values()):
            extra["phases_ms"] = {str(k): float(v) for k, v in list(phases.items())[:8]}
        cases.append(
            CaseTiming(
                i,
                case.label(),
                kernel_ms,
                eager,
                int(t.get("reps", 0)),
                compile_ms=compiled,
                **extra,
            )
        )
    vs_compile = None
    if all(c.compile_ms for c in cases):
        vs_compile = geometric_mean([c.compile_ms / c.kernel_ms for c in cases])  # type: ignore[operator]
    return cases, geometric_mean([c.speedup for c in cases]), vs_compile
