"""GPU timing used for the candidate (in its child) and the baselines (in a trusted process).

Warm-up calls first (compile, autotune and first launches excluded); the L2 cache is flushed before
each timed call, its persisting lines reset and its persisting carve-out set to zero first (a
candidate's access-policy window keeps nothing across kbx's flush); CUDA events bracket the call,
the end after the GPU has finished the call's work on every stream (``cuda_clock`` says how, and
how launch and sync overheads are kept out); calls rotate over several input sets at distinct
addresses; repetitions go on until the 95% confidence interval of the median is within +-1% of it
or the time budget is spent (calls of 20 ms or more: 2 input sets, 5 repetitions at least; of 250
ms or more: 3). See docs/design/timing.md."""

from __future__ import annotations

import functools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, NamedTuple

from kbx.gpu import gpulock

L2_FLUSH_BYTES = 256 * 1024 * 1024  # several times the L2 of any current GPU (H200: 50 MiB)
CASE_BUDGET_MS = 500.0  # wall time after which a case's repetitions stop, converged or not


@dataclass(frozen=True)
class Precision:
    """When a candidate's repetitions stop: the median's CI within +-``rel_ci`` of it, or
    ``budget_ms`` of wall time spent (``Tuning.timing_rel_ci``, ``Tuning.timing_budget_ms``)."""

    rel_ci: float = 0.01
    budget_ms: float = CASE_BUDGET_MS


DEFAULT_PRECISION = Precision()


@dataclass(frozen=True)
class Timing:
    median_ms: float
    ci_low_ms: float
    ci_high_ms: float
    min_ms: float
    reps: int
    samples_ms: tuple[float, ...] = ()  # every timed call's time, in order (``statistics``)


def statistics_of(samples: Sequence[float]) -> dict[str, float | int]:
    """The median, its confidence interval, the fastest call and the count of ``samples``: how
    the parent reads a child's timing from the raw times it reported (``follow``), so that no
    statistic the candidate's process computed is taken on trust."""
    lo, hi = median_ci(samples)
    return {
        "median_ms": statistics.median(samples),
        "ci_low_ms": lo,
        "ci_high_ms": hi,
        "min_ms": min(samples),
        "reps": len(samples),
    }


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
    budget_ms: float = CASE_BUDGET_MS,
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
    return Timing(statistics.median(times), lo, hi, min(times), len(times), tuple(times))


# Warm-up wall time after every set's first call: short, since it is spent in an exclusive turn,
# while a candidate has made its correctness and benchmark calls before its timing, and a
# baseline warms up under the shared lock (docs/design/throughput.md, GPU lock and timing turns).
WARM_MS = 10.0
SLOW_CALL_MS = 20.0  # a call this long evicts the L2 by itself and is timed over 2 input sets
SLOW_MIN_REPS = 5  # ... with this many repetitions at least (10 otherwise)
VERY_SLOW_CALL_MS = 250.0  # a call this long gets VERY_SLOW_MIN_REPS: batched torch.linalg
VERY_SLOW_MIN_REPS = 3  # eager baselines (seconds a call), which hold the GPU that long each


@dataclass(frozen=True)
class Warm:
    sets: int  # input sets the timing rotates over
    slow: bool  # a warm-up call took SLOW_CALL_MS or more
    call_ms: float = 0.0  # how long that call took (wall time, with its sync)

    @property
    def min_reps(self) -> int:
        if not self.slow:
            return 10
        return VERY_SLOW_MIN_REPS if self.call_ms >= VERY_SLOW_CALL_MS else SLOW_MIN_REPS


def warm_up(
    calls: Sequence[Callable[[], Any]],
    prepare: Prepare | None = None,
    min_ms: float = WARM_MS,
    sync: Callable[[], None] | None = None,
) -> Warm:
    """Every input set once, then calls until ``min_ms`` of wall time is spent.

    A call (after the first, which may still compile or autotune) that takes ``SLOW_CALL_MS``
    or more ends the warm-up at the second set: such calls (batched ``torch.linalg`` eager
    baselines take seconds) gain nothing from more sets or more warm-up, and each costs the
    GPU's exclusive turn.  Under a shared GPU-lock hold (a baseline's), each call first makes
    way for a timing that waits (``gpulock.make_way``)."""
    if sync is None:
        import torch

        sync = torch.cuda.synchronize
    start = time.monotonic()
    for i, call in enumerate(calls):
        gpulock.make_way(sync)
        if prepare is not None:
            prepare(i)
        began = time.monotonic()
        call()
        sync()
        took_ms = (time.monotonic() - began) * 1000
        if i >= 1 and took_ms >= SLOW_CALL_MS:
            return Warm(i + 1, True, took_ms)
    while (time.monotonic() - start) * 1000 < min_ms:
        gpulock.make_way(sync)
        if prepare is not None:
            prepare(0)
        calls[0]()
        sync()
    return Warm(len(calls), False)


SLEEP_CYCLES = 1_000_000  # ~0.5 ms of GPU clock: longer than the host takes to enqueue a call
SYNC_SLACK = 0.10  # the device-wide end may trail the stream end by this much (or SYNC_SLACK_MS)
SYNC_SLACK_MS = 0.02  # of host jitter before it is taken for work on an untracked stream

# Streams the timed code may run work on besides the current one (the candidate's child
# registers every stream it creates, see ``launches.track_streams``): the timed region's end
# waits for each of them on the GPU, so their work counts without a host round trip.
SIDE_STREAMS: list[Any] = []


class CudaOps(NamedTuple):
    """CUDA's timing primitives, taken from torch's C types (immutable: no Python code can
    patch them) and its C functions when the child sets up, before the candidate is imported: a
    candidate that replaces ``torch.cuda.Event.elapsed_time`` or ``torch.cuda.synchronize`` in
    its process changes nothing that kbx's clock calls."""

    event: Callable[[], Any]  # a timing event
    record: Callable[[Any, Any], None]  # (event, stream)
    elapsed_ms: Callable[[Any, Any], float]  # (start, end)
    wait: Callable[[Any], None]  # the host waits for an event
    synchronize: Callable[[], None]  # the whole current device
    sleep: Callable[[int], None]  # a spin kernel of so many cycles
    stream: Callable[[], Any]  # the current stream
    zero: Callable[[Any], Any]  # Tensor.zero_
    cold_l2: Callable[[], None]  # no persisting L2 lines, no carve-out for them (``cold_l2``)


@functools.cache
def cuda_ops() -> CudaOps:
    """Bound once per process (``child.set_up`` calls it before the candidate's import)."""
    import torch

    base = torch._C._CudaEventBase
    return CudaOps(
        event=functools.partial(base, enable_timing=True),
        record=base.record,
        elapsed_ms=base.elapsed_time,
        wait=base.synchronize,
        synchronize=torch._C._cuda_synchronize,
        sleep=torch._C._cuda_sleep,
        stream=torch.cuda.current_stream,
        zero=torch.Tensor.zero_,
        cold_l2=cold_l2(),
    )


CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06  # CUlimit (cuda.h)


def cold_l2(driver: Any = None) -> Callable[[], None]:
    """A call that makes the L2 cold for persisting accesses, bound to the CUDA driver's own
    functions (``driver``: libcuda, loaded here when None): the persisting carve-out set to
    zero bytes (``cuCtxSetLimit``) and every line a candidate's access-policy window made
    persisting reset to normal (``cuCtxResetPersistingL2Cache``), so that kbx's flush evicts
    them too.  Called before every timed call: a window the candidate sets again inside its
    call persists nothing into the next one.  Where the driver has neither function (no CUDA,
    an old driver), a call that does nothing."""
    import ctypes

    try:
        lib = driver if driver is not None else ctypes.CDLL("libcuda.so.1")
        set_limit, reset = lib.cuCtxSetLimit, lib.cuCtxResetPersistingL2Cache
    except (OSError, AttributeError):
        return lambda: None
    set_limit.argtypes, set_limit.restype = [ctypes.c_int, ctypes.c_size_t], ctypes.c_int
    reset.argtypes, reset.restype = [], ctypes.c_int

    def cold() -> None:
        set_limit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0)
        reset()

    return cold


def cuda_clock() -> Clock:
    """Times one call on the GPU: from an event before it to the end of its work on every
    stream.

    A spin kernel queued ahead of the start event keeps the GPU busy while the host enqueues the
    start and the call, so the call's own launch overhead is hidden as it is in a real program.
    The end is read two ways: an event on the current stream after it has waited for every
    known side stream (exact: no host timing in it), and an event recorded after a device-wide
    synchronization, less the host's calibrated wake-up time (catches work on streams kbx does
    not know of, but carries host jitter).  The second counts only when it trails the first by
    more than the slack: host noise then never inflates a timing, nor a miscalibrated wake-up
    time shrink one below its kernels' real cost."""
    import torch

    return device_clock(torch.cuda.current_device())


@functools.cache
def device_clock(device: int) -> Clock:
    """The clock of CUDA device ``device`` (the current one): built and calibrated once per
    process."""
    return new_cuda_clock()


def new_cuda_clock() -> Clock:
    import torch

    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")

    ops = cuda_ops()

    def raw(call: Callable[[], Any]) -> tuple[float, float]:
        begin, on_stream, after_sync = ops.event(), ops.event(), ops.event()
        ops.cold_l2()  # no line survives the flush as persisting
        ops.zero(flush)  # evict the previous call's data from L2
        ops.sleep(SLEEP_CYCLES)
        ops.record(begin, ops.stream())
        call()
        current = ops.stream()
        for side in SIDE_STREAMS:
            if side != current:
                current.wait_stream(side)
        ops.record(on_stream, current)
        ops.synchronize()  # the whole device: work on any stream
        ops.record(after_sync, ops.stream())
        ops.wait(after_sync)
        return float(ops.elapsed_ms(begin, on_stream)), float(ops.elapsed_ms(begin, after_sync))

    for _ in range(3):
        raw(lambda: None)
    gap = statistics.median(raw(lambda: None)[1] for _ in range(15))

    def one(call: Callable[[], Any]) -> float:
        exact, synced = raw(call)
        synced -= gap
        if synced > exact * (1 + SYNC_SLACK) + SYNC_SLACK_MS:
            return synced  # work on a stream nobody told kbx about
        return max(exact, 1e-6)

    return one


Hold = Callable[[], AbstractContextManager[Any]]  # a GPU-lock hold (gpulock.shared, .exclusive)


def time_calls(
    calls: Sequence[Callable[[], Any]],
    prepare: Prepare | None = None,
    budget_ms: float = CASE_BUDGET_MS,
    warm_hold: Hold = nullcontext,
    turn: Hold = nullcontext,
    rel_ci: float = 0.01,
) -> Timing:
    """Median time on the current CUDA device of calls rotating over input sets: the warm-up
    inside ``warm_hold()``, the timed calls inside ``turn()`` (a baseline warms up under the
    shared lock and takes the exclusive one for its timed calls only; a candidate's child holds
    the exclusive lock around all of its cases and passes neither)."""
    with warm_hold():
        warm = warm_up(calls, prepare)
    with turn():
        return measure(
            calls[: warm.sets], cuda_clock(), prepare, budget_ms, warm.min_reps, rel_ci=rel_ci
        )


def time_fixed(call: Callable[[], Any], prepare: Prepare, reps: int) -> float:
    """Fastest of ``reps`` timed calls of a warm ``call``, each prepared (untimed) first."""
    clock = cuda_clock()
    best = math.inf
    for i in range(reps):
        prepare(i)
        best = min(best, clock(call))
    return best


def time_call(fn: Callable[[], Any], budget_ms: float = CASE_BUDGET_MS) -> Timing:
    return time_calls([fn], budget_ms=budget_ms)
