"""Trusted side of performance: PyTorch eager timed on the same GPU, in the same run.

The candidate's benchmark cases are timed in its child (``runner.time_bench``); the eager
baseline is timed here, in the parent, with the same engine and under the same per-GPU lock.
Baselines are cached for the life of the process (a persistent cache comes with the
performance engine).
"""

from __future__ import annotations

import threading

import torch

from kbx.evaluate.runner import exclusive, time_case
from kbx.evaluate.timing import Timing
from kbx.result import CaseTiming, geometric_mean
from kbx.task import Task
from kbx.verdict import Reject, Verdict

_eager: dict[tuple[str, int], Timing] = {}
_lock = threading.Lock()


def eager_timing(task: Task, index: int, lock_path: str | None) -> Timing:
    key = (task.id, index)
    with _lock:
        if key not in _eager:
            case = task.bench[index]
            inputs = task.make_inputs(case, "cuda")  # the same engine and rotation as candidates
            with exclusive(lock_path), torch.no_grad():
                _eager[key], _ = time_case(task, case, inputs, task.reference)
        return _eager[key]


def speedups(
    task: Task, timings: list[dict[str, float]], lock_path: str | None
) -> tuple[list[CaseTiming], float]:
    """Per-case timings against eager and their geometric-mean speedup; every case must count."""
    if len(timings) != len(task.bench):
        raise Reject(Verdict.CRASHED, f"timed {len(timings)} of {len(task.bench)} benchmark cases")
    cases = []
    for i, (case, t) in enumerate(zip(task.bench, timings, strict=True)):
        kernel_ms = float(t.get("median_ms", 0.0))
        if not kernel_ms > 0:
            raise Reject(Verdict.CRASHED, f"bench {i}: no valid timing")
        eager = eager_timing(task, i, lock_path)
        cases.append(CaseTiming(i, case.label(), kernel_ms, eager.median_ms, int(t.get("reps", 0))))
    return cases, geometric_mean([c.speedup for c in cases])
