"""GPU timing used for both the candidate (in its child) and the eager baseline (in the parent).

Warm-up calls first (compile, autotune and first launches excluded); the L2 cache is flushed before
each timed call; CUDA events bracket the call between device-wide synchronizations, so work on
other streams counts; calls rotate over several input sets at distinct addresses; repetitions go
on until the 95% confidence interval of the median is within +-1% of it or the time budget is
spent.  See docs/design/timing.md.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

L2_FLUSH_BYTES = 256 * 1024 * 1024  # several times the L2 of any current GPU (H200: 50 MiB)


@dataclass(frozen=True)
class Timing:
    median_ms: float
    ci_low_ms: float
    ci_high_ms: float
    min_ms: float
    reps: int


def median_ci(times: Sequence[float], z: float = 1.96) -> tuple[float, float]:
    """Distribution-free confidence interval of the median from order statistics."""
    xs = sorted(times)
    n = len(xs)
    half = z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    return xs[lo], xs[hi]


Clock = Callable[[Callable[[], Any]], float]  # times one call, in ms


Prepare = Callable[[int], None]  # untimed, before call i of the rotation: restore inputs, reseed


def measure(
    calls: Sequence[Callable[[], Any]],
    clock: Clock,
    prepare: Prepare | None = None,
    budget_ms: float = 1000.0,
    min_reps: int = 10,
    max_reps: int = 2000,
    rel_ci: float = 0.01,
) -> Timing:
    """Time ``calls`` in rotation until the median's CI is within +-rel_ci or the budget ends."""
    times: list[float] = []
    start = time.monotonic()
    while len(times) < max_reps:
        i = len(times) % len(calls)
        if prepare is not None:
            prepare(i)
        times.append(clock(calls[i]))
        if len(times) >= min_reps:
            lo, hi = median_ci(times)
            mid = statistics.median(times)
            if (hi - lo) / 2 <= rel_ci * mid:
                break
            if (time.monotonic() - start) * 1000 > budget_ms:
                break
    lo, hi = median_ci(times)
    return Timing(statistics.median(times), lo, hi, min(times), len(times))


def warm_up(
    calls: Sequence[Callable[[], Any]], prepare: Prepare | None = None, min_ms: float = 25.0
) -> None:
    """Every input set once, then until ``min_ms`` of wall time is spent."""
    import torch

    start = time.monotonic()
    for i, call in enumerate(calls):
        if prepare is not None:
            prepare(i)
        call()
    torch.cuda.synchronize()
    while (time.monotonic() - start) * 1000 < min_ms:
        if prepare is not None:
            prepare(0)
        calls[0]()
        torch.cuda.synchronize()


def cuda_clock() -> Clock:
    import torch

    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")

    def one(call: Callable[[], Any]) -> float:
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        flush.zero_()  # evict the previous call's data from L2
        torch.cuda.synchronize()
        begin.record()
        call()
        torch.cuda.synchronize()  # the whole device: side streams count
        end.record()
        end.synchronize()
        return float(begin.elapsed_time(end))

    return one


def time_calls(
    calls: Sequence[Callable[[], Any]], prepare: Prepare | None = None, budget_ms: float = 1000.0
) -> Timing:
    """Median time on the current CUDA device of calls rotating over input sets."""
    warm_up(calls, prepare)
    return measure(calls, cuda_clock(), prepare, budget_ms=budget_ms)


def time_call(fn: Callable[[], Any], budget_ms: float = 1000.0) -> Timing:
    return time_calls([fn], budget_ms=budget_ms)
