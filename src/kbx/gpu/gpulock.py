"""The per-GPU lock: timing holds it exclusively, other GPU work (correctness calls, reference
outputs) holds it shared, so nothing runs on a GPU while a case is timed there.

Two files make a writer-preferring reader-writer lock out of ``flock``: a timing first takes the
gate and keeps it, so new shared holders queue behind it instead of starving it; a shared holder
only passes through the gate (exclusively, for a moment).  Timings hold the gate shared among
themselves, so once the shared holds have drained, every timing that queued meanwhile runs before
the next shared holder passes: one drain serves a batch of timings instead of each timing paying
its own (``flock`` grants a shared request while an exclusive one waits).  Holding is re-entrant
per thread (a launch inside a correctness call, or inside a timing, takes nothing more), which
also rules out self-deadlock on the gate.

Preferring writers has a cost: while a timing waits for a long shared hold to end, every newcomer
waits too, and the GPU idles: behind the parent's checks and baseline warm-ups, which hold for
tens of seconds, timings spent much of a cold run waiting (docs/design/throughput.md, GPU lock
and timing turns).  So a long shared hold makes way (``make_way``): at a safe point
of its holder (a GPU operation under ``gpuops``, a call of a warm-up) it finishes its GPU work,
lets go and queues again behind the timing, once it is ``YIELD_AFTER_S`` old and a timing holds
or wants the gate.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from kbx.gpu import cores, gpuwait

_held = threading.local()  # this thread's mode ("ex" or "sh") and depth


class _Turns:
    """How many threads of this process hold the lock exclusively now (``covered``); an object,
    not a list, so that kbx's frozen copies of this module (``bound``) share it."""

    def __init__(self) -> None:
        self.n = 0
        self.lock = threading.Lock()

    def add(self, step: int) -> None:
        with self.lock:
            self.n += step


_TURNS = _Turns()
# Called with True before a wait that would block and False after it (the child tells its
# parent, so that time spent queueing for the GPU is not counted against the candidate).
ON_WAIT: list[Callable[[bool], None]] = []


def flock(f: TextIO, mode: int) -> None:
    """``fcntl.flock``, announcing a wait that would block to the ON_WAIT hooks."""
    try:
        fcntl.flock(f, mode | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    for hook in ON_WAIT:
        hook(True)
    try:
        fcntl.flock(f, mode)
    finally:
        for hook in ON_WAIT:
            hook(False)


LOG_MIN_S = 0.05  # shared holds at least this long are logged (every exclusive one is)
YIELD_AFTER_S = 0.02  # a shared hold this old makes way for a waiting timing (``make_way``)
CHECK_EVERY_S = 0.005  # ... which it looks for at most this often (a syscall each time)


def log_hold(path: str, mode: str, what: str, waited_s: float, held_s: float) -> None:
    """One line per long hold in ``<lock>.log`` (pid, mode, what, wait and hold in seconds), to
    see what the others queued behind (``scripts/lock_report.py``).  Diagnostics only: a child
    can write anything there."""
    if mode == "sh" and held_s < LOG_MIN_S:
        return
    line = {"t": round(time.time(), 3), "pid": os.getpid(), "mode": mode, "what": what}
    line.update(waited_s=round(waited_s, 4), held_s=round(held_s, 4))
    try:
        with open(path + ".log", "a") as f:  # one short append: lines do not interleave
            f.write(json.dumps(line) + "\n")
    except OSError:
        pass


def waited_s() -> float:
    """Seconds this thread has spent queueing for the lock so far (differences of two calls
    give the wait of what ran between them)."""
    return float(getattr(_held, "waited", 0.0))


def timing_waits(path: str) -> bool:
    """Whether a timing holds or wants the gate (a shared holder only passes through it; one
    passing just now reads as a timing too, which costs a needless yield at worst)."""
    try:
        gate = open(path + ".gate", "a")  # noqa: SIM115
    except OSError:
        return False
    with gate:
        try:
            fcntl.flock(gate, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(gate, fcntl.LOCK_UN)
    return False


def make_way(sync: Callable[[], None] | None = None) -> bool:
    """At a safe point of this thread's outermost shared hold: if a timing waits and the hold is
    ``YIELD_AFTER_S`` old, ``sync`` (default: the CUDA device, if this process uses it), let go
    and queue again behind the timing.  Returns whether it made way; nothing to do inside an
    exclusive hold, inside a nested one or without a hold."""
    hold = getattr(_held, "outer", None)
    if not isinstance(hold, shared):
        return False
    return hold.make_way(sync or cuda_sync)


def cuda_sync() -> None:
    import sys

    torch = sys.modules.get("torch")  # a process that never imported torch has no GPU work
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def _depth() -> int:
    return getattr(_held, "depth", 0)


def holding() -> bool:
    """Whether this thread already holds the lock (in either mode)."""
    return _depth() > 0


def covered() -> bool:
    """Whether this thread's GPU work runs inside a hold already: its own, or another thread's
    timing turn in this process.  A turn has the GPU to itself, and what the process's threads
    launch meanwhile is part of what it times; a thread that queued behind its own process's
    turn would wait for ever where the turn waits for it (a candidate that launches from a
    worker thread and joins it inside its timed call)."""
    return holding() or _TURNS.n > 0


class exclusive:
    """Held while timing: waits for current shared holders, keeps new ones out."""

    def __init__(self, path: str | None, what: str = "", core: int | None = None) -> None:
        self.path = path
        self.what = what  # for the hold log: what the holder was doing
        self.core = core  # the GPU's timing core (``cores``): a turn's thread moves onto it
        self.files: list[TextIO] = []
        self.since = (0.0, 0.0)  # when the wait began and when the lock was got
        self.spins = False  # a timing turn: this process spins while it waits for the GPU
        self.moved: set[int] | None = None  # ... and its thread runs on the GPU's own core
        self.looked = 0.0  # when a shared hold last looked for a waiting timing (``make_way``)

    mode = "ex"

    def __enter__(self) -> None:
        if self.path and _depth() == 0:
            self.acquire()
            _held.mode = self.mode
            _held.outer = self
            if self.mode == "ex":  # the timing turn's host side
                _TURNS.add(1)
                self.spins = gpuwait.begin_turn()
                self.moved = cores.begin_turn(self.core)
        elif self.path and self.mode == "ex" and getattr(_held, "mode", "ex") == "sh":
            raise RuntimeError("the GPU lock cannot be upgraded from shared to exclusive")
        _held.depth = _depth() + 1

    def acquire(self) -> None:
        """``take`` the lock, noting when it was asked for and got, and the thread's wait."""
        asked = time.monotonic()
        self.take()
        self.since = (asked, time.monotonic())
        _held.waited = waited_s() + self.since[1] - asked

    def take(self) -> None:
        assert self.path is not None
        gate = open(self.path + ".gate", "a")  # noqa: SIM115
        flock(gate, fcntl.LOCK_SH)  # shared with other timings: they queue as one batch
        main = open(self.path, "a")  # noqa: SIM115
        flock(main, fcntl.LOCK_EX)
        self.files = [main, gate]

    def __exit__(self, *exc: object) -> None:
        _held.depth = _depth() - 1
        if _held.depth == 0:
            _held.outer = None
            if self.files and self.mode == "ex":
                _TURNS.add(-1)
        cores.end_turn(self.moved)
        gpuwait.end_turn(self.spins)
        self.spins, self.moved = False, None
        self.let_go()

    def let_go(self) -> None:
        for f in self.files:  # the main lock first, then the gate
            fcntl.flock(f, fcntl.LOCK_UN)
            f.close()
        if self.files and self.path:
            asked, got = self.since
            log_hold(self.path, self.mode, self.what, got - asked, time.monotonic() - got)
        self.files = []


class shared(exclusive):
    """Held while doing other GPU work: passes the gate, then shares the main lock."""

    mode = "sh"

    def take(self) -> None:
        assert self.path is not None
        gate = open(self.path + ".gate", "a")  # noqa: SIM115
        flock(gate, fcntl.LOCK_EX)
        try:
            main = open(self.path, "a")  # noqa: SIM115
            flock(main, fcntl.LOCK_SH)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
            gate.close()
        self.files = [main]

    def make_way(self, sync: Callable[[], None]) -> bool:
        """``gpulock.make_way`` for this hold, which must be its thread's outermost."""
        now = time.monotonic()
        if not self.files or not self.path or now - self.since[1] < YIELD_AFTER_S:
            return False
        if now - self.looked < CHECK_EVERY_S:
            return False
        self.looked = now
        if not timing_waits(self.path):
            return False
        sync()  # this hold's GPU work must not run into the timing
        self.let_go()
        self.acquire()  # through the gate: behind the timing
        return True


def locked(
    path: str, what: str, fn: Callable[..., Any], *args: Any, _hold: Any = shared, **kwargs: Any
) -> Any:
    """``fn`` under the GPU lock (shared unless ``_hold`` says otherwise), its GPU work finished
    before the lock is let go (``what`` names the hold in the lock's log; ``fn``'s own arguments
    pass untouched): a kernel launch, an autotuning config's benchmark, a compiled graph's run."""
    with _hold(path, what):
        out = fn(*args, **kwargs)
        cuda_sync()
    return out
