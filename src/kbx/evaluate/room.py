"""A job's room on its GPU: the reservation it holds in its GPU's memory budget
(``kbx.gpu.budget``) from before its child starts until its result, so that the jobs in flight
never add up to more than the card holds (docs/design/memory.md)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from kbx.gpu import budget, footprint
from kbx.gpu.placement import Placement
from kbx.suite.task import Task

WAITING = "waiting for GPU memory"  # the step a job waiting for its reservation is at


@contextmanager
def for_job(
    task: Task, place: Placement, told: Callable[[str, float], None] | None = None
) -> Iterator[None]:
    """The job's reservation, waited for: its child's context and tensors, then (the child gone)
    the parent's check and any baseline measured for it; released at the end, with this
    process's cached blocks past the budget's slack.  ``told(WAITING, 0)`` before the wait and
    ``told("", seconds)`` after it say where the job is and how long it waited."""
    if not place.cuda:
        yield
        return
    room = budget.on(place.gpu)
    if told is not None:
        told(WAITING, 0.0)
    began = time.monotonic()
    grant = room.reserve(footprint.job_bytes(task, place.timed, room.context), f"job {task.id}")
    if told is not None:
        told("", time.monotonic() - began)
    try:
        yield
    finally:
        if grant is not None:
            grant.release()
        room.trim()


def covered(place: Placement) -> AbstractContextManager[Any]:
    """Meanwhile this thread's reservations on ``place``'s GPU cost nothing: the job's own
    reservation pays for its baselines, measured after its child has ended."""
    return budget.on(place.gpu).covered() if place.cuda else nullcontext()
