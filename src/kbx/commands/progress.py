"""The progress of a ``kbx eval`` run, from its first second: a bar for the candidates and one for
the baselines stage (saying why it runs), each with its count and an estimate of the time left;
past ``STALL_S`` without a result, what is still running and where (``Evaluator.running``), and
who holds the run's GPU lock (``lockholders``: past twice that, in the run folder's
``logs/stalls.log`` too, with kbx's own stacks); and a line for each of kbx's own faults, with the
file that holds its trace."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.progress import TaskID
from rich.text import Text

from kbx.commands.terminal import LogProgress, console
from kbx.core.activity import Activity
from kbx.core.result import Result
from kbx.gpu import lockholders
from kbx.suite.verdict import Verdict

STALL_S = 30.0  # no result for this long: say what is still running, and again as often
TICK_S = 1.0  # how often the watch looks
SHOWN = 4  # activities named in one line; the rest counted


def baselines_title(gpu: str, count: int, tasks: int, compile_too: bool) -> str:
    """Why the baselines stage runs, for ``count`` of the run's ``tasks`` tasks."""
    kinds = "eager and torch.compile baselines" if compile_too else "eager baselines"
    why = (
        "first run on this GPU; cached for later runs"
        if count >= tasks
        else f"{count} of {tasks} tasks not cached for this GPU yet; cached for later runs"
    )
    return f"measuring {kinds} for {gpu} ({why})"


def running_line(activities: list[Activity], quiet_s: float) -> str:
    """``no result for 35 s; still running: A (cases 2, 41 s), B (...) and 3 more``."""
    now = time.time()
    shown = ", ".join(a.line(now) for a in activities[:SHOWN])
    more = f" and {len(activities) - SHOWN} more" if len(activities) > SHOWN else ""
    return f"no result for {quiet_s:.0f} s; still running: {shown or 'nothing'}{more}"


def fault_line(result: Result) -> str | None:
    """One line for a result that kbx's own fault decided, or that was judged again alone."""
    if result.verdict is Verdict.HARNESS_ERROR:
        return f"kbx: {result.task_id}: kbx's own fault (harness_error): {result.detail}"
    if result.rerun:
        first = f"{result.rerun['verdict']}: {result.rerun['detail']}"[:240]
        return (
            f"kbx: {result.task_id}: judged again alone ({result.rerun['why']}; first "
            f"{first}): {result.verdict}"
        )
    return None


class Watch:
    """The run's bars and the thread that watches for long waits without a result."""

    def __init__(
        self,
        bar: LogProgress,
        running: Callable[[], list[Activity]],
        stall_s: float | None = None,
        run_dir: Path | None = None,
    ) -> None:
        self.bar, self.running, self.run_dir = bar, running, run_dir
        self.dumped = 0.0  # when the stall being noted was dumped (``lockholders.dump``)
        self.stall_s = STALL_S if stall_s is None else stall_s
        self.tick_s = min(TICK_S, self.stall_s / 2)
        self.candidates = bar.add_task("evaluating", total=None, last="")
        self.current: TaskID = self.candidates  # the bar a note goes to
        self.stage: TaskID | None = None
        self.last = time.monotonic()  # the last result (or the start)
        self.told = 0.0  # when the last note was given
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.watch, daemon=True, name="kbx-progress")

    def __enter__(self) -> Watch:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.thread.join(5)

    def baseline(self, title: str, task_id: str, left: int) -> None:
        """The baselines stage: ``("", n)`` opens its bar (``title``), then each task done."""
        if not task_id:
            self.stage = self.bar.add_task(title, total=left, last="")
            self.current, self.last = self.stage, time.monotonic()
            return
        if self.stage is not None:
            self.bar.update(self.stage, advance=1, last=f"{task_id}: measured ({left} left)")
            self.last = time.monotonic()
            if left == 0:
                self.current = self.candidates

    def result(self, result: Result) -> None:
        self.current, self.last = self.candidates, time.monotonic()
        self.bar.update(self.candidates, advance=1, last=f"{result.task_id}: {result.verdict}")
        if (line := fault_line(result)) is not None:
            console.print(Text(line, style="yellow"), soft_wrap=True)

    def watch(self) -> None:
        """Past ``stall_s`` without a result, a note of what is running, every ``stall_s``."""
        while not self.stop.wait(self.tick_s):
            now = time.monotonic()
            quiet = now - self.last
            if quiet >= self.stall_s and now - self.told >= self.stall_s:
                self.told = now
                running = self.running()
                self.bar.note(
                    self.current, running_line(running, quiet) + self.locks(quiet, running)
                )

    def locks(self, quiet: float, running: list[Activity]) -> str:
        """``; GPU lock held by ...`` where the run has GPU locks; the first time a stall is
        ``2 * stall_s`` old, its holds and kbx's stacks go to the run folder's log too."""
        if self.run_dir is None or (said := lockholders.note(self.run_dir)) is None:
            return ""
        if quiet >= 2 * self.stall_s and self.dumped < self.last:
            self.dumped = time.monotonic()
            now = time.time()
            if (log := lockholders.dump(self.run_dir, [a.line(now) for a in running])) is not None:
                said += f" (stacks in {log})"
        return f"; {said}"
