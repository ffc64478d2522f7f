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
the parent (the child's job, the baseline worker's request) and hand it to the lock's exclusive
hold.  A ``Reservation`` belongs to the scheduler that made it and is released when it closes:
the process's cores are the OS's state, and a later run in the same process reserves afresh.
Only with MIN_OTHER_CORES left for the rest; on Linux (``sched_setaffinity`` acts on the calling
thread there).
"""

from __future__ import annotations

import contextlib
import os
import threading

MIN_OTHER_CORES = 4  # fewer cores left for the rest: no reservation


def supported() -> bool:
    return hasattr(os, "sched_setaffinity") and hasattr(os, "sched_getaffinity")


class Reservation:
    """A core per GPU for its timing turns, the rest of the process's cores for all else."""

    def __init__(self) -> None:
        self.by_gpu: dict[int | None, int] = {}  # job GPU (None: the default one) -> its core
        self.before: set[int] = set()  # the process's cores before the reservation
        self.lock = threading.Lock()

    def reserve(self, gpus: list[int | None]) -> dict[int | None, int]:
        """In the parent, before any job starts: one core per GPU (the highest of its cores),
        every thread of the process confined to the others."""
        if not supported():
            return {}
        with self.lock:
            if not self.before:
                self.before = set(os.sched_getaffinity(0))
            wanted = [g for g in dict.fromkeys(gpus) if g not in self.by_gpu]
            taken = set(self.by_gpu.values())
            free = [c for c in sorted(self.before, reverse=True) if c not in taken]
            if len(free) - len(wanted) < MIN_OTHER_CORES:
                return dict(self.by_gpu)
            for gpu in wanted:
                self.by_gpu[gpu] = free.pop(0)
            confine_threads(self.before - set(self.by_gpu.values()))
            return dict(self.by_gpu)

    def adopt(self, reserved: dict[int | None, int | None]) -> None:
        """In a worker process of the parent (``kbx.run.workers``): the parent's reservation
        (the worker already runs on the other cores)."""
        with self.lock:
            self.by_gpu.update({gpu: core for gpu, core in reserved.items() if core is not None})

    def for_gpu(self, gpu: int | None) -> int | None:
        """The core reserved for a job GPU's timing turns, if any."""
        return self.by_gpu.get(gpu)

    def release(self) -> None:
        """Give every thread its cores back (only where this reservation confined them)."""
        with self.lock:
            if self.before and supported():
                confine_threads(self.before)
            self.by_gpu.clear()
            self.before = set()


def confine_threads(cpus: set[int]) -> None:
    """Every thread of this process, started or not, on ``cpus``."""
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):  # a thread that has just ended
            os.sched_setaffinity(int(tid), cpus)


def begin_turn(core: int | None) -> set[int] | None:
    """Move the calling thread onto its GPU's ``core``; the cores it had, for ``end_turn``."""
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
