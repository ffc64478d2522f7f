"""Who holds a run's GPU locks, for a run that produces no result for a while: the processes
that hold or wait for each lock file of the run folder (``gpulock``), read from the kernel's
table of locks (``/proc/locks``), each named by its command line.  A hold is logged only when it
ends (``gpulock.log_hold``), so a hold that never ends is seen only here.

``note`` gives the progress line's part; ``dump`` appends the same, with every thread's stack of
this process (kbx's own checks and baseline threads), to ``logs/stalls.log`` in the run folder,
and asks each baseline worker that holds a lock for its stacks (``SIGUSR1``: they go to its own
log in the run folder's ``logs``).
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kbx.core.proctree import tree_pids

LOCKS = Path("/proc/locks")
LOOK_S = 1.0  # how often a ``Watch`` reads the table
WORKER = "evaluate.baseline_worker"  # a baseline worker's module (``command``): it dumps stacks


@dataclass(frozen=True)
class Hold:
    file: str  # the lock file's name: gpu0.lock, gpu0.lock.gate
    pid: int
    mode: str  # READ (shared) or WRITE (exclusive)
    waiting: bool


def lock_files(run_dir: Path) -> dict[int, str]:
    """The run folder's GPU lock files, by inode."""
    return {
        i: name for lock in run_dir.glob("gpu*.lock") for i, name in one_lock(str(lock)).items()
    }


def holds(run_dir: Path, table: Path = LOCKS) -> list[Hold]:
    """Each hold of, and wait for, the run's lock files."""
    return holds_of(lock_files(run_dir), table)


def holds_of(files: dict[int, str], table: Path = LOCKS) -> list[Hold]:
    """Each hold of, and wait for, ``files`` (names by inode)."""
    if not files:
        return []
    try:
        lines = table.read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split()
        waiting = "->" in fields
        rest = [f for f in fields if f != "->"]
        if len(rest) < 6 or rest[1] != "FLOCK" or not rest[4].isdigit():
            continue
        try:
            inode = int(rest[5].rsplit(":", 1)[-1])
        except ValueError:
            continue
        if inode in files:
            found.append(Hold(files[inode], int(rest[4]), rest[3], waiting))
    return found


def one_lock(lock: str) -> dict[int, str]:
    """A GPU's lock file and its gate, by inode (``lock_files`` for one GPU)."""
    found = {}
    for path in (Path(lock), Path(lock + ".gate")):
        try:
            found[path.stat().st_ino] = path.name
        except OSError:
            continue
    return found


def hogged(lock: str, pids: set[int], table: Path = LOCKS) -> int:
    """How many other processes wait for the GPU lock ``lock`` while one of ``pids`` holds it
    (its main file in either mode, or its gate exclusively: passing it); 0 where none of them
    holds it or nobody else waits.  A candidate's child is judged by this (``Follower``)."""
    found = holds_of(one_lock(lock), table)
    mine = [h for h in found if h.pid in pids and not h.waiting]
    if not any(h.file.endswith(".lock") or h.mode == "WRITE" for h in mine):
        return 0
    return len({h.pid for h in found if h.waiting and h.pid not in pids})


class Watch:
    """Since when a process and its descendants (``pid``'s tree) have held the GPU lock
    ``lock`` while others wait for it, at every look (``hogged``), looked at most every
    ``LOOK_S``: a candidate's child (``follow``) and a baseline worker (``compile_pool``) are
    ended past their limit."""

    def __init__(self, lock: str, pid: int) -> None:
        self.lock, self.pid = lock, pid
        self.since: float | None = None  # None: not holding while others wait at the last look
        self.looked = 0.0
        self.waiting = 0  # how many processes waited at the last look

    def restart(self) -> None:
        """Count from the next look on (a new case has its own limit)."""
        self.since = None

    def held_s(self) -> float:
        """Seconds of holding while others wait, as of the latest look (0: not now)."""
        now = time.monotonic()
        if now - self.looked >= LOOK_S:
            self.looked = now
            self.waiting = hogged(self.lock, set(tree_pids(self.pid)))
            self.since = (self.since or now) if self.waiting else None
        return 0.0 if self.since is None else now - self.since


def command(pid: int) -> str:
    """What a process runs, shortly: ``kbx`` for this one."""
    if pid == os.getpid():
        return "kbx"
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "gone"
    words = [w.decode(errors="replace") for w in raw if w]
    for i, word in enumerate(words):
        if word == "-m" and i + 1 < len(words):
            return words[i + 1].removeprefix("kbx.")
    return " ".join(words)[:60] or "?"


def note(run_dir: Path) -> str | None:
    """``GPU lock held by 123 (sandbox.child.main, shared); 7 waiting``, or None (no lock)."""
    found = holds(run_dir)
    held = [h for h in found if not h.waiting and h.file.endswith(".lock")]
    gate = [h for h in found if not h.waiting and h.file.endswith(".gate") and h.mode == "WRITE"]
    waiting = len({h.pid for h in found if h.waiting})
    if not held and not gate and not waiting:
        return None
    parts = [f"{h.pid} ({command(h.pid)}, {'shared' if h.mode == 'READ' else 'exclusive'})"
             for h in held]  # fmt: skip
    parts += [f"{h.pid} ({command(h.pid)}, passing the gate)" for h in gate]
    who = ", ".join(dict.fromkeys(parts)) or "nobody"
    return f"GPU lock held by {who}; {waiting} waiting"


def dump(run_dir: Path, running: Sequence[str] = ()) -> Path | None:
    """``note``'s holds, every one, what is still running (``running``: every line, where the
    progress line names four), and this process's thread stacks appended to the run folder's
    ``logs/stalls.log``; its path (None where it cannot be written)."""
    path = run_dir / "logs" / "stalls.log"
    found = holds(run_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as f:
            f.write(f"=== {time.strftime('%Y-%m-%dT%H:%M:%S')}: no result for a while\n")
            for h in found:
                how = "waits for" if h.waiting else "holds"
                f.write(f"{h.pid} {how} {h.file} ({h.mode}): {command(h.pid)}\n")
            f.writelines(f"running: {line}\n" for line in running)
            f.flush()
            faulthandler.dump_traceback(f, all_threads=True)
    except OSError:
        return None
    for h in found:
        if not h.waiting and command(h.pid).startswith(WORKER):
            with contextlib.suppress(OSError):
                os.kill(h.pid, signal.SIGUSR1)  # its stacks to its log (``stacks_on_request``)
    return path
