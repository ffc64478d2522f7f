"""kbx's own faults, told in one line each, their full traces in log files of the run folder.

A CUDA error in one of kbx's own processes (the parent's threads, a fork server or its spares, a
baseline worker, a worker process) is no candidate's doing and no reason to fill the terminal with
tracebacks: the process that meets it writes the trace to ``logs/`` in the run folder
(``save``) and says in one line who met it, what it was and which file holds the trace
(``report``, or a result's detail).  kbx's subprocesses write their standard streams to files of
their own there too (``stream``): nothing of theirs reaches the terminal.  Each process is told
the run folder once (``open_logs``); without one, traces are not kept and streams are left as
they are.
"""

from __future__ import annotations

import itertools
import os
import re
import sys
import threading
import traceback
from pathlib import Path
from types import TracebackType
from typing import IO, Any

LOGS = "logs"  # the folder of the run folder that holds them
_state: dict[str, Path | None] = {"folder": None}
_numbers = itertools.count(1)
_lock = threading.Lock()


def open_logs(run_dir: Path | None) -> Path | None:
    """This process's logs go to ``run_dir/logs`` from now on (made now; None: where they went
    before, if anywhere), and its kbx threads' uncaught exceptions with them."""
    if run_dir is not None:
        folder = run_dir / LOGS
        folder.mkdir(parents=True, exist_ok=True)
        _state["folder"] = folder
        install_thread_hook()
    return _state["folder"]


def folder() -> Path | None:
    return _state["folder"]


def log_file(name: str) -> Path | None:
    """A new file ``logs/<name>-<pid>-<n>.log`` (None without a run folder)."""
    where = folder()
    if where is None:
        return None
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80]
    with _lock:
        number = next(_numbers)
    return where / f"{safe}-{os.getpid()}-{number}.log"


def save(name: str, text: str) -> Path | None:
    """``text`` (a trace, a process's stderr) in a new log file; its path, or None where there is
    no run folder or it cannot be written."""
    path = log_file(name)
    if path is None:
        return None
    try:
        path.write_text(text)
    except OSError:
        return None
    return path


def cause(exc: BaseException) -> str:
    """An exception in one line: its type and the first line of its message."""
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first}"[:300]


def where(path: Path | None) -> str:
    """`` (trace: logs/x.log)`` to end a line with, or nothing."""
    return f" (trace: {path})" if path is not None else ""


def report(who: str, exc: BaseException, name: str) -> str:
    """Save ``exc``'s trace and print one line on stderr: who met it, its cause, the file; the
    line is returned too."""
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    line = f"kbx: {who}: {cause(exc)}{where(save(name, trace))}"
    print(line, file=sys.stderr, flush=True)
    return line


def stream(name: str) -> IO[bytes] | None:
    """A new log file open for a subprocess's stdout and stderr (None without a run folder)."""
    path = log_file(name)
    if path is None:
        return None
    try:
        return open(path, "ab")  # noqa: SIM115 - the caller closes it once the process has it
    except OSError:
        return None


def to_log(path: Path | None) -> None:
    """This process's own stdout and stderr from now on into the log file ``path`` (a worker
    process): what it or its libraries print never reaches the terminal."""
    if path is None:
        return
    try:
        out = open(path, "ab")  # noqa: SIM115 - closed once its descriptor is copied
    except OSError:
        return
    with out:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd in (1, 2):
            os.dup2(out.fileno(), fd)


def thread_hook(args: Any) -> None:
    """``threading.excepthook`` for kbx's threads (named ``kbx-...``): one line and a log file
    instead of a traceback; others' go to the previous hook."""
    thread = args.thread
    if thread is None or not thread.name.startswith("kbx") or args.exc_value is None:
        _previous(args)
        return
    report(f"thread {thread.name}", args.exc_value, f"thread-{thread.name}")


def install_thread_hook() -> None:
    """Route kbx's threads' uncaught exceptions through ``thread_hook`` (once per process)."""
    if threading.excepthook is not thread_hook:
        threading.excepthook = thread_hook


_previous = threading.excepthook


def trace_of(
    kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
) -> str:
    """A caught exception's full trace, as Python would print it."""
    if exc is None:
        return ""
    return "".join(traceback.format_exception(kind, exc, tb))
