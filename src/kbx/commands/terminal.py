"""What the commands share on the terminal: the console, one-line errors, progress bars that
print one plain line per finished item in logs and pipes."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

console = Console()
PIPE_WIDTH = 180  # columns of tables in logs and pipes, where rich would lay them out for 80


def fail(message: str, code: int = 2) -> int:
    """Print why a command cannot go on, as one red line (no markup: paths and globs hold
    brackets), and return its exit code."""
    console.print(Text(message, style="red"), soft_wrap=True)
    return code


def fit_console() -> None:
    """Rich takes 80 columns where stdout is no terminal, folding a table's cells over many
    lines in logs and pipes: give it PIPE_WIDTH there, unless COLUMNS says how many."""
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console.width = max(console.width, PIPE_WIDTH)


def tasks_problem(pattern: str | None) -> str | None:
    """Why ``--tasks`` selects no task, or None."""
    from kbx.suite import select

    if pattern is None or select(pattern):
        return None
    return f"--tasks {pattern!r} matches no task (ids look like Math/rsqrt; `kbx tasks` lists them)"


class LogProgress(Progress):
    """A rich progress bar on a terminal; one plain line per finished item in logs and pipes."""

    def update(self, task_id: TaskID, **fields: Any) -> None:  # type: ignore[override]
        super().update(task_id, **fields)
        if not console.is_terminal and fields.get("advance"):
            t = self.tasks[task_id]
            print(
                f"[{int(t.completed)}/{int(t.total or 0)} {t.elapsed or 0:.0f}s] "
                f"{fields.get('last', '')}",
                flush=True,
            )


def progress_bar() -> Progress:
    return LogProgress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"),
        console=console,
        disable=not console.is_terminal,
    )
