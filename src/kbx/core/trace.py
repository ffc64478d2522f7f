"""Marks of when a run's processes reach each step of their start-up, for finding where the
first seconds of a run go (the fork servers' imports, the workers' set-up, the parent's
baselines stage).  The marks go to the ``kbx.core.trace`` logger; ``Tuning.trace`` (or ``enable``)
turns on one line per mark on stderr: the process, the step and the time since the epoch, to
line up with the records' ``started_at``.  Processes kbx starts are told whether to trace.
"""

from __future__ import annotations

import logging
import sys

LOG = logging.getLogger("kbx.core.trace")
FORMAT = "kbx trace: pid %(process)d %(message)s at %(created).3f"


def enable(on: bool = True) -> None:
    """Write this process's marks to stderr (``on``), or keep them to the logger's handlers."""
    if not on:
        return
    if not LOG.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(FORMAT))
        LOG.addHandler(handler)
    LOG.setLevel(logging.DEBUG)
    LOG.propagate = False


def enabled() -> bool:
    return LOG.isEnabledFor(logging.DEBUG)


def mark(step: str) -> None:
    """Report that this process has reached ``step`` (a few words), when tracing is on."""
    LOG.debug(step)
