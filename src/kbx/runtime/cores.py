"""A CPU core of its own for each GPU's timing turn.

Timings taken while every core of the host is busy come out inflated, up to several times, and
a call on new contents timed once can read far above the median (docs/design/throughput.md, CPU
cores and waiting).  A timing thread that the scheduler takes
off its core while it enqueues a call, or before it reads the device-wide end, leaves the GPU
idle inside the timed region, and the exclusive lock cannot prevent that.

So a run on GPUs keeps one core per GPU free of all other work (``reserve``: the parent's
threads, and with them every process it starts, run on the other cores), and the thread that
takes a GPU's exclusive hold moves onto that GPU's core for the turn and back after it
(``begin_turn``, ``end_turn``, called by ``gpulock``).  Processes learn their GPU's core from
the parent (the child's job, the baseline worker's request) and register it under the GPU's
lock path.  Only with MIN_OTHER_CORES left for the rest; on Linux (``sched_setaffinity`` acts
on the calling thread there).
"""

from __future__ import annotations

import contextlib
import os
import threading

MIN_OTHER_CORES = 4  # fewer cores left for the rest: no reservation

RESERVED: dict[str, int] = {}  # lock path -> the core its exclusive holder moves to
_by_gpu: dict[int | None, int] = {}  # in the parent: job GPU (None: the default) -> core
_first_mask: set[int] = set()  # the parent's cores before the first reservation
_lock = threading.Lock()


def supported() -> bool:
    return hasattr(os, "sched_setaffinity") and hasattr(os, "sched_getaffinity")


def reserve(gpus: list[int | None]) -> dict[int | None, int]:
    """In the parent, before any job starts: one core per GPU (the highest of its cores), the
    parent's threads confined to the others.  Idempotent across runs of one process."""
    if not supported():
        return {}
    with _lock:
        if not _first_mask:
            _first_mask.update(os.sched_getaffinity(0))
        cores = sorted(_first_mask)
        wanted = [g for g in dict.fromkeys(gpus) if g not in _by_gpu]
        taken = set(_by_gpu.values())
        free = [c for c in reversed(cores) if c not in taken]
        if len(free) - len(wanted) < MIN_OTHER_CORES:
            return dict(_by_gpu)
        for gpu in wanted:
            _by_gpu[gpu] = free.pop(0)
        rest = set(cores) - set(_by_gpu.values())
        for tid in os.listdir("/proc/self/task"):  # every thread of the parent, started or not
            with contextlib.suppress(OSError):  # a thread that has just ended
                os.sched_setaffinity(int(tid), rest)
        return dict(_by_gpu)


def adopt(reserved: dict[int | None, int | None]) -> None:
    """In a worker process of the parent (``kbx.run.workers``): the parent's reservation, as
    ``for_gpu`` gives it there (the worker already runs on the other cores)."""
    with _lock:
        _by_gpu.update({gpu: core for gpu, core in reserved.items() if core is not None})


def for_gpu(gpu: int | None) -> int | None:
    """The core reserved for a job GPU's timing turns, if any (parent side)."""
    return _by_gpu.get(gpu)


def register(lock_path: str | None, core: int | None) -> None:
    """In a process that takes the GPU's exclusive hold: its timing turns run on ``core``."""
    if lock_path and core is not None:
        RESERVED[lock_path] = core


def begin_turn(lock_path: str | None) -> set[int] | None:
    """Move the calling thread onto its GPU's core; the cores it had, for ``end_turn``."""
    core = RESERVED.get(lock_path or "")
    if core is None or not supported():
        return None
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {core})
    except OSError:  # the core is not ours (another cpuset): time where we are
        return None
    return before


def end_turn(before: set[int] | None) -> None:
    if before:
        os.sched_setaffinity(0, before)
