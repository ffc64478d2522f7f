"""Marks of when a run's processes reach each step of their start-up, for finding where the
first seconds of a run go (the fork servers' imports, the workers' set-up, the parent's
baselines stage).  Off by default; with ``KBX_TRACE=1`` each mark is one line on stderr: the
process, the step and the time since the epoch, to line up with the records' ``started_at``.
"""

from __future__ import annotations

import os
import sys
import time

VAR = "KBX_TRACE"


def on() -> bool:
    return os.environ.get(VAR) == "1"


def mark(step: str) -> None:
    """Report that this process has reached ``step`` (a few words), when tracing is on."""
    if on():
        sys.stderr.write(f"kbx trace: pid {os.getpid()} {step} at {time.time():.3f}\n")
        sys.stderr.flush()
