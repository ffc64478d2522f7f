"""Trusted side of performance: PyTorch baselines timed on the same GPU, in the same run.

The candidate's benchmark cases are timed in its child (``benchtime.time_bench``); the baselines,
PyTorch eager and ``torch.compile`` (default mode) of the task's reference, are timed here, in
the parent, with the same engine and under the same per-GPU lock.  They are cached in memory for
the run and, with ``BaselineCache``, across runs, keyed by GPU, driver, torch, triton, task id and
version, case and baseline kind: a number measured under other software is never reused.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import torch

from kbx.evaluate.benchtime import time_case
from kbx.evaluate.runner import clone, exclusive, shared
from kbx.hardware import Peaks, fingerprint, load_peaks
from kbx.result import CaseTiming, geometric_mean
from kbx.task import Task
from kbx.verdict import Reject, Verdict

KINDS = ("eager", "compile")
_memory: dict[str, float | None] = {}
_lock = threading.Lock()


class BaselineCache:
    """Baseline medians (ms) in SQLite; a failed torch.compile is cached as None."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS baselines (key TEXT PRIMARY KEY, ms REAL)")

    def get(self, key: str) -> tuple[bool, float | None]:
        row = self.db.execute("SELECT ms FROM baselines WHERE key = ?", (key,)).fetchone()
        return (row is not None, row[0] if row else None)

    def put(self, key: str, ms: float | None) -> None:
        self.db.execute("INSERT OR REPLACE INTO baselines VALUES (?, ?)", (key, ms))


@cache
def open_cache(path: Path | None) -> BaselineCache | None:
    return BaselineCache(path) if path else None


def baseline_key(task: Task, index: int, kind: str) -> str:
    fp = fingerprint("cuda")
    parts = {k: fp[k] for k in ("gpu", "driver", "torch", "triton")}
    parts.update(task=task.id, version=task.version, case=index, kind=kind)
    return json.dumps(parts, sort_keys=True)


def measure(task: Task, index: int, kind: str, lock_path: str | None) -> float | None:
    """Median ms of the baseline; torch.compile compiles on a first call outside the timing lock
    (GPU work of other jobs may go on meanwhile), then is timed under it like eager."""
    case = task.bench[index]
    inputs = task.make_inputs(case, "cuda")  # the same engine and input rotation as candidates
    fn: Callable[..., Any] = task.reference
    try:
        with torch.no_grad():
            if kind == "compile":
                torch._dynamo.reset()
                fn = torch.compile(task.reference)
                with shared(lock_path):
                    fn(*clone(inputs.args), **clone(dict(inputs.kwargs)))
            with exclusive(lock_path):
                timing, _, _ = time_case(task, case, inputs, fn)
    except Exception:  # noqa: BLE001 - torch.compile cannot handle every reference
        if kind == "eager":
            raise
        return None
    return timing.median_ms


def baseline_ms(
    task: Task, index: int, kind: str, lock_path: str | None, cache: BaselineCache | None
) -> float | None:
    key = baseline_key(task, index, kind)
    with _lock:
        if key in _memory:
            return _memory[key]
        found, ms = cache.get(key) if cache else (False, None)
        if not found:
            ms = measure(task, index, kind, lock_path)
            if cache:
                cache.put(key, ms)
        _memory[key] = ms
        return ms


_peaks: dict[str, Peaks] = {}


def peaks(cache_dir: Path | None, lock_path: str | None) -> Peaks:
    """This GPU's measured peaks, once per process (and cached on disk)."""
    with _lock:
        key = str(cache_dir)
        if key not in _peaks:
            with exclusive(lock_path):
                _peaks[key] = load_peaks(cache_dir)
        return _peaks[key]


def roofline(task: Task, index: int, kernel_ms: float, limits: Peaks) -> dict[str, float]:
    """Achieved throughput of a case, and ``too_fast`` below the physical floor (10% slack for
    timer noise and for peaks measured a little under the hardware's)."""
    case = task.bench[index]
    flops, moved = task.flops(case), task.bytes_moved(case)
    floor = limits.floor_ms(moved, flops)
    if kernel_ms < floor / 1.1:
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


def speedups(
    task: Task,
    timings: list[dict[str, float]],
    lock_path: str | None,
    cache: BaselineCache | None = None,
    with_compile: bool = True,
    limits: Peaks | None = None,
) -> tuple[list[CaseTiming], float, float | None]:
    """Per-case timings against the baselines and geometric-mean speedups (vs eager, vs
    torch.compile when it works on every case); every case must count."""
    if len(timings) != len(task.bench):
        raise Reject(Verdict.CRASHED, f"timed {len(timings)} of {len(task.bench)} benchmark cases")
    cases = []
    for i, (case, t) in enumerate(zip(task.bench, timings, strict=True)):
        kernel_ms = float(t.get("median_ms", 0.0))
        if not kernel_ms > 0:
            raise Reject(Verdict.CRASHED, f"bench {i}: no valid timing")
        eager = baseline_ms(task, i, "eager", lock_path, cache)
        compiled = baseline_ms(task, i, "compile", lock_path, cache) if with_compile else None
        assert eager is not None
        extra: dict[str, Any] = roofline(task, i, kernel_ms, limits) if limits else {}
        if t.get("profiler_ms") is not None:
            extra["profiler_ms"] = float(t["profiler_ms"])
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
