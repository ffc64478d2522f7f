"""A GPU's memory, shared out: everything kbx puts on a GPU reserves its estimate here first and
waits while the budget is short, so that no number of jobs in flight can exhaust the card.

One ``Budget`` per GPU and process (``install``, ``on``), made at a run's start from the card's
free memory (``kbx.gpu.footprint``).  Reservations are served first come, first served: a large
one at the head of the queue is not starved by small ones behind it.  A reservation larger than
what the budget can ever give proceeds alone, once nothing else is reserved: it never deadlocks.
Standing holds (idle spares' and workers' contexts) lower what the others can reserve for as long
as they last.  ``reserve(..., wait=False)`` is for work that is only worth doing when there is
room (references and baselines computed ahead): it never waits and never overtakes a waiter.  A
thread whose job reservation already covers nested work (its baselines, measured after its child
has ended) marks itself ``covered``: its reservations then cost nothing.

The accounting rests on estimates; a guard reads the GPU's real free memory (``free``) before
a grant and holds it back while the card is fuller than the accounting says, and the log
(``gpu-memory.log`` in the run folder) records every wait and a sample every few seconds, to
compare the accounting with the card (docs/design/memory.md).
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

POLL_S = 0.5  # a waiter held back by the guard looks at the card again this often
SAMPLE_S = 5.0  # a sample of the budget and the card in the log this often
WAIT_LOGGED_S = 1.0  # a grant that waited this long is logged with its wait

_covered = threading.local()  # the budgets this thread's current reservation covers


@dataclass(eq=False)
class Grant:
    """A reservation: ``nbytes`` of a budget until ``release`` (a ``with`` block releases it)."""

    budget: Budget | None
    nbytes: int
    what: str
    standing: bool = False

    def release(self) -> None:
        budget, self.budget = self.budget, None
        if budget is not None:
            budget.give_back(self)

    def split(self, nbytes: int, what: str) -> Grant:
        """Turn ``nbytes`` of this reservation into a standing hold of its own (a baseline worker
        started for it keeps its context after the reservation ends); where this one holds less
        (a covered reservation), the hold is taken outright."""
        if self.budget is None:
            return Grant(None, 0, what, True)
        if self.nbytes < nbytes:
            return self.budget.hold(nbytes, what)
        return self.budget.move(self, nbytes, what)

    def __enter__(self) -> Grant:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


@dataclass(eq=False)
class Ticket:
    """A reservation waiting its turn."""

    nbytes: int
    what: str
    since: float = field(default_factory=time.monotonic)


class Budget:
    """``total`` bytes of one GPU for this process (None: unlimited, nothing is counted).
    ``free``: the card's free bytes now, for the guard (None: no guard); ``headroom``: what the
    guard keeps free; ``reclaim``: hands this process's cached blocks back to the card, tried
    before the guard holds a grant back; ``log``: the log file; ``context``: the measured
    bytes of one CUDA context (``kbx.gpu.footprint``); ``cached``: this process's cached blocks
    that hold no tensor (``trim``)."""

    def __init__(
        self,
        name: str,
        total: int | None,
        *,
        context: int = 0,
        headroom: int = 0,
        free: Callable[[], int] | None = None,
        reclaim: Callable[[], None] | None = None,
        cached: Callable[[], int] | None = None,
        log: Path | None = None,
    ) -> None:
        self.name, self.total, self.context, self.headroom = name, total, context, headroom
        self.free, self.reclaim, self.cached, self.log_path = free, reclaim, cached, log
        self.standing = 0  # bytes of standing holds
        self.active = 0  # bytes of the other reservations
        self.peak = 0
        self.guarded_at = 0.0
        self.queue: deque[Ticket] = deque()
        self.changed = threading.Condition()
        self.closed = threading.Event()

    def reserve(self, nbytes: int, what: str, wait: bool = True) -> Grant | None:
        """``nbytes`` for ``what``, waiting for its turn and for room (``wait``); without
        ``wait`` None unless it fits now with nobody waiting."""
        nbytes = max(0, int(nbytes))
        if self.total is None:
            return Grant(None, 0, what)
        if self in getattr(_covered, "budgets", ()):
            return Grant(self, 0, what)  # paid for by the reservation that covers this thread
        with self.changed:
            if not wait:
                if self.queue or not self.fits(nbytes):
                    return None
                return self.take(nbytes, what)
            ticket = Ticket(nbytes, what)
            self.queue.append(ticket)
            try:
                self.wait_turn(ticket)
            finally:
                self.queue.remove(ticket)
                self.changed.notify_all()
            return self.take(nbytes, what, time.monotonic() - ticket.since)

    def wait_turn(self, ticket: Ticket) -> None:
        """Wait (holding ``changed``) until ``ticket`` is first and fits."""
        logged = False
        while not (self.queue[0] is ticket and self.fits(ticket.nbytes)):
            if not logged and time.monotonic() - ticket.since >= WAIT_LOGGED_S:
                self.write("wait", what=ticket.what, bytes=ticket.nbytes, ahead=self.ahead(ticket))
                logged = True
            self.changed.wait(POLL_S)

    def fits(self, nbytes: int) -> bool:
        """Whether ``nbytes`` more may be granted now (the caller holds ``changed``): within the
        total, or alone; and the card has room for it (the guard)."""
        assert self.total is not None
        if self.active == 0:
            return True  # alone: even one larger than the budget proceeds
        if self.standing + self.active + nbytes > self.total:
            return False
        return self.card_has_room(nbytes)

    def card_has_room(self, nbytes: int) -> bool:
        """The guard: the card's free memory, less ``nbytes``, stays over half the headroom; this
        process's cached blocks are handed back once before it says no."""
        if self.free is None:
            return True
        floor = nbytes + self.headroom // 2
        if self.free() >= floor:
            return True
        if self.reclaim is not None:
            self.reclaim()
        free = self.free()
        if free < floor and time.monotonic() - self.guarded_at >= SAMPLE_S:
            self.guarded_at = time.monotonic()  # logged at most once a sample's time
            self.write("guard", bytes=nbytes, free=free, active=self.active)
        return free >= floor

    def take(self, nbytes: int, what: str, waited_s: float = 0.0) -> Grant:
        if self.total is not None and self.standing + nbytes > self.total:
            self.write("alone", what=what, bytes=nbytes, total=self.total)  # everything waits
        self.active += nbytes
        self.peak = max(self.peak, self.standing + self.active)
        if waited_s >= WAIT_LOGGED_S:
            self.write("granted", what=what, bytes=nbytes, waited_s=round(waited_s, 2))
        return Grant(self, nbytes, what)

    def hold(self, nbytes: int, what: str) -> Grant:
        """A standing hold of ``nbytes``, taken at once (it may overdraw the budget: later
        reservations wait for it)."""
        if self.total is None:
            return Grant(None, 0, what, True)
        with self.changed:
            self.standing += max(0, int(nbytes))
            self.peak = max(self.peak, self.standing + self.active)
        self.write("hold", what=what, bytes=nbytes)
        return Grant(self, max(0, int(nbytes)), what, True)

    def move(self, grant: Grant, nbytes: int, what: str) -> Grant:
        """``nbytes`` of ``grant`` become a standing hold (``Grant.split``)."""
        with self.changed:
            grant.nbytes -= nbytes
            self.active -= nbytes
            self.standing += nbytes
        return Grant(self, nbytes, what, True)

    def give_back(self, grant: Grant) -> None:
        with self.changed:
            if grant.standing:
                self.standing -= grant.nbytes
            else:
                self.active -= grant.nbytes
            self.changed.notify_all()

    def trim(self) -> None:
        """After a job: this process's cached blocks beyond half the headroom go back to the
        card, where the next job's child can use them (the caching allocator keeps them
        otherwise: docs/design/throughput.md, Memory release)."""
        if self.cached is None or self.reclaim is None:
            return
        if self.cached() > self.headroom // 2:
            self.reclaim()

    def pressed(self) -> bool:
        """Whether a reservation is waiting (idle holders should let go)."""
        with self.changed:
            return bool(self.queue)

    def ahead(self, ticket: Ticket) -> int:
        return list(self.queue).index(ticket) if ticket in self.queue else 0

    @contextmanager
    def covered(self) -> Iterator[None]:
        """Reservations of this thread on this budget cost nothing meanwhile: a reservation it
        holds covers them."""
        budgets = getattr(_covered, "budgets", ())
        _covered.budgets = (*budgets, self)
        try:
            yield
        finally:
            _covered.budgets = budgets

    def state(self) -> dict[str, Any]:
        with self.changed:
            return {
                "standing": self.standing,
                "active": self.active,
                "waiting": len(self.queue),
                "peak": self.peak,
            }

    def write(self, event: str, **fields: Any) -> None:
        """One line of the log: time, process, GPU, event (diagnostics only)."""
        if self.log_path is None:
            return
        line = {"t": round(time.time(), 3), "pid": os.getpid(), "gpu": self.name, "event": event}
        line.update(fields)
        try:
            with open(self.log_path, "a") as f:  # one short append: lines do not interleave
                f.write(json.dumps(line) + "\n")
        except OSError:
            pass

    def sample(self) -> None:
        """Every ``SAMPLE_S`` until ``close``: the accounting beside the card's free memory."""
        while not self.closed.wait(SAMPLE_S):
            free = None
            if self.free is not None:
                try:
                    free = self.free()
                except Exception:  # noqa: BLE001 - a sample is diagnostics only
                    free = None
            self.write("sample", free=free, total=self.total, **self.state())

    def close(self) -> None:
        self.closed.set()
        self.write("end", total=self.total, **self.state())


UNLIMITED = Budget("unlimited", None)
_budgets: dict[int | None, tuple[Budget, int]] = {}  # GPU -> its budget, and how many use it
_lock = threading.Lock()
_samplers = itertools.count()


def install(gpu: int | None, make: Callable[[], Budget]) -> Budget:
    """This process's budget of ``gpu``: the one installed already (another run of this process
    shares it), else ``make()``'s, sampled to its log until the last ``uninstall``."""
    with _lock:
        if gpu in _budgets:
            budget, users = _budgets[gpu]
            _budgets[gpu] = (budget, users + 1)
            return budget
        budget = make()
        _budgets[gpu] = (budget, 1)
    if budget.total is not None and budget.log_path is not None:
        name = f"kbx-memory-{next(_samplers)}"
        threading.Thread(target=budget.sample, daemon=True, name=name).start()
    return budget


def uninstall(gpu: int | None) -> None:
    with _lock:
        if gpu not in _budgets:
            return
        budget, users = _budgets[gpu]
        if users > 1:
            _budgets[gpu] = (budget, users - 1)
            return
        del _budgets[gpu]
    budget.close()


def on(gpu: int | None) -> Budget:
    """The budget of ``gpu`` in this process (none installed: ``UNLIMITED``)."""
    with _lock:
        found = _budgets.get(gpu)
    return found[0] if found else UNLIMITED
