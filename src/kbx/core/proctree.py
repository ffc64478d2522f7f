"""A process and its live descendants, read from ``/proc``: a candidate's child and what it
started (CPU time, ``childenv.tree_cpu_s``; GPU-lock holds, ``follow``), a baseline worker and
its compile processes (``compile_pool``)."""

from __future__ import annotations

import os
from pathlib import Path


def tree_pids(pid: int) -> list[int]:
    """``pid`` and its live descendants (each process once: its threads' children too)."""
    found, todo = [], [pid]
    while todo:
        here = todo.pop()
        if here in found:
            continue
        try:
            tasks = os.listdir(f"/proc/{here}/task")
        except OSError:
            continue
        found.append(here)
        for tid in tasks:
            try:
                todo += [
                    int(c) for c in Path(f"/proc/{here}/task/{tid}/children").read_text().split()
                ]
            except (OSError, ValueError):
                continue
    return found
