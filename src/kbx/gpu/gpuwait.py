"""How a kbx process waits for its GPU: asleep, except during a timing turn.

By default CUDA spins a core in every process that waits for its GPU (a process has one context,
fewer than the host's cores): a wait costs its own length in CPU time by default and almost none
with the primary context set to blocking synchronisation, whether set before or after torch
created the context (``benchmarks/sync_cpu.py``; docs/design/throughput.md, CPU cores and
waiting).  A run has
tens of processes per GPU (children, baseline workers, the parent's threads) waiting for GPU
work they share under the lock while others compile on the same cores, so every one of them
waits asleep (``asleep``).  An exclusive hold, a timing turn, spins again (``gpulock``): the
clock reads a call's device-wide end on the host after a wake-up calibrated once, and a
sleeping thread wakes later and less predictably.

The flags are set through the driver API on every device the process sees.  Without a driver
(CPU machines) nothing happens.  Never call this in the fork server: the driver must not be
initialised in a process that forks children.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any

SCHED_MASK = 0x07  # CU_CTX_SCHED_*: auto 0, spin 1, yield 2, blocking sync 4
SPIN, BLOCKING = 0x01, 0x04


def load_driver() -> Any:
    """libcuda, initialised; None where there is none (or no device is visible)."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    return cuda if cuda.cuInit(0) == 0 else None


class Contexts:
    """This process's primary contexts and the scheduling flag kbx gave them (``sched``; None:
    none yet, or a call failed).  The driver keeps the flags per process, so there is one of
    these per process (``CONTEXTS``); a timing turn reads ``sched`` here rather than from the
    driver, which it must not initialise in a process that never went asleep (the fork server
    forks children: the driver must not be initialised there)."""

    def __init__(self, load: Callable[[], Any] = load_driver) -> None:
        self.load, self.loaded, self.cuda = load, False, None
        self.sched: int | None = None
        self.lock = threading.Lock()

    def driver(self) -> Any:
        """The driver, loaded and initialised at the first call."""
        with self.lock:
            if not self.loaded:
                self.cuda, self.loaded = self.load(), True
            return self.cuda

    def set_mode(self, sched: int) -> bool:
        """Give every visible device's primary context the scheduling flag ``sched`` (its other
        flags kept); False where there is no driver or a call failed."""
        cuda = self.driver()
        if cuda is None:
            return False
        with self.lock:
            if self.sched == sched:
                return True
            ok = set_flags(cuda, sched)
            self.sched = sched if ok else None
            return ok

    def asleep(self) -> bool:
        with self.lock:
            return self.sched == BLOCKING


def set_flags(cuda: Any, sched: int) -> bool:
    """The driver calls of ``Contexts.set_mode``: whether every one succeeded."""
    count = ctypes.c_int()
    if cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return False
    ok = True
    for ordinal in range(count.value):
        dev, flags, active = ctypes.c_int(), ctypes.c_uint(), ctypes.c_int()
        if cuda.cuDeviceGet(ctypes.byref(dev), ordinal) != 0:
            ok = False
            continue
        if cuda.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active)):
            ok = False
            continue
        new = (flags.value & ~SCHED_MASK) | sched
        setter = getattr(cuda, "cuDevicePrimaryCtxSetFlags_v2", None)
        if setter is None:
            setter = cuda.cuDevicePrimaryCtxSetFlags
        ok = setter(dev, new) == 0 and ok
    return ok


CONTEXTS = Contexts()  # this process's


def asleep() -> bool:
    """From now on this process's threads sleep while they wait for the GPU."""
    return CONTEXTS.set_mode(BLOCKING)


def begin_turn() -> bool:
    """At an exclusive hold: spin, if this process waits asleep (``asleep`` was called);
    whether it switched, for ``end_turn``."""
    return CONTEXTS.asleep() and CONTEXTS.set_mode(SPIN)


def end_turn(switched: bool) -> None:
    if switched:
        asleep()
