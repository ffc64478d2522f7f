"""What this process is working on now, for progress lines: each candidate in flight (or a task's
baselines being measured), the step it is at and since when.  The stages write it as they go
(``Outcome``, the baselines stage); a command reads ``snapshot`` to say what a long wait without
a result is waiting for.  Worker processes send theirs to the parent (``kbx.run.workers``)."""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Activity:
    label: str  # the candidate (its task, and its source where that says more), or the task
    step: str  # "setting up", "cases 2", "timing of bench 0", "check", "measuring baselines"...
    started: float  # time.time() when it began
    since: float  # time.time() when its step began

    def line(self, now: float | None = None) -> str:
        """``Math/add (cases 2, 41 s)``: the step and how long the activity has run."""
        now = time.time() if now is None else now
        return f"{self.label} ({self.step}, {now - self.started:.0f} s)"


class Board:
    """The activities of one process, by token."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: dict[int, Activity] = {}
        self.tokens = itertools.count()

    def begin(self, label: str, step: str) -> int:
        now = time.time()
        with self.lock:
            token = next(self.tokens)
            self.items[token] = Activity(label, step, now, now)
        return token

    def step(self, token: int, step: str) -> None:
        with self.lock:
            if token in self.items and self.items[token].step != step:
                self.items[token] = replace(self.items[token], step=step, since=time.time())

    def end(self, token: int) -> None:
        with self.lock:
            self.items.pop(token, None)

    def snapshot(self) -> list[Activity]:
        """What is under way, the longest-running first."""
        with self.lock:
            return sorted(self.items.values(), key=lambda a: a.started)


BOARD = Board()
