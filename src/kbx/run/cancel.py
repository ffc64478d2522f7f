"""Ending a cancelled run's children: the candidates' processes below the run's fork servers
and its fresh interpreters, found through /proc (every child leads a session of its own), and
the second Ctrl-C that would leave them running, ignored meanwhile (``Scheduler.stop_children``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path


def kill_children(server_pids: list[int]) -> None:
    """Kill the candidates' children of these fork servers and this process's children in fresh
    interpreters (``kbx.sandbox.child.main``), each with its process group: every child leads a
    session of its own, and its namespace ends with it (``confine.isolate``)."""
    me = os.getpid()
    for pid, ppid in parents().items():
        if ppid in server_pids or (ppid == me and b"kbx.sandbox.child.main" in cmdline(pid)):
            for kill in (os.killpg, os.kill):  # a child not yet in its own session: itself
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """SIGINT ignored meanwhile, where this thread may set the handler (the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


def parents() -> dict[int, int]:
    """Each process's parent, from /proc (a process that ends meanwhile is left out)."""
    found = {}
    for name in os.listdir("/proc"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if name.isdigit():
                stat = Path(f"/proc/{name}/stat").read_text()
                found[int(name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return found


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
