"""GPU timing used for both the candidate (in its child) and the eager baseline (in the parent).

Basic engine: warm-up calls first (compile, autotune and first launches excluded), the L2 cache is
flushed before each timed call, CUDA events bracket the call after a device-wide synchronize, and
the median of the repetitions is kept.  See docs/design/timing.md.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

L2_FLUSH_BYTES = 256 * 1024 * 1024  # several times the L2 of any current GPU (H200: 50 MiB)


@dataclass(frozen=True)
class Timing:
    median_ms: float
    min_ms: float
    reps: int


def time_call(fn: Callable[[], Any], budget_ms: float = 300.0, max_reps: int = 200) -> Timing:
    """Median time of ``fn()`` on the current CUDA device."""
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    for _ in range(3):  # warm-up: compilation, autotuning, first launches of the process
        fn()
    torch.cuda.synchronize()
    estimate = _one(fn, flush)
    reps = int(max(10, min(max_reps, budget_ms / max(estimate, 1e-3))))
    times = [_one(fn, flush) for _ in range(reps)]
    return Timing(median_ms=statistics.median(times), min_ms=min(times), reps=reps)


def _one(fn: Callable[[], Any], flush: torch.Tensor) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    flush.zero_()  # evict the inputs and outputs of the previous call from L2
    torch.cuda.synchronize()
    start.record()
    fn()
    torch.cuda.synchronize()  # whole device: work the call put on other streams counts too
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end))
