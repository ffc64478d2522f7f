"""kbx.gpu.lockholders: who holds and who waits for a run's GPU lock, from the kernel's table of
locks, with real ``flock`` holds of other processes (the lock itself needs no GPU)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from kbx.gpu import lockholders

HOLD = """
import fcntl, sys, time
f = open(sys.argv[1], "a")
fcntl.flock(f, fcntl.LOCK_EX if sys.argv[2] == "ex" else fcntl.LOCK_SH)
print("held", flush=True)
time.sleep(60)
"""


def holder(path: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), mode], stdout=subprocess.PIPE, text=True
    )


def test_a_hold_and_the_waits_behind_it_are_named(tmp_path):
    lock = tmp_path / "gpu0.lock"
    lock.touch()
    (tmp_path / "gpu0.lock.gate").touch()
    owner = holder(lock, "ex")
    waiter = None
    try:
        assert owner.stdout is not None and owner.stdout.readline() == "held\n"
        waiter = holder(lock, "sh")
        for _ in range(100):  # the waiter reaches its flock
            if any(h.waiting for h in lockholders.holds(tmp_path)):
                break
            time.sleep(0.05)
        found = lockholders.holds(tmp_path)
        assert lockholders.Hold("gpu0.lock", owner.pid, "WRITE", False) in found
        assert any(h.pid == waiter.pid and h.waiting for h in found)
        said = lockholders.note(tmp_path)
        assert said is not None and said.startswith(f"GPU lock held by {owner.pid} (")
        assert said.endswith(", exclusive); 1 waiting")
        log = lockholders.dump(tmp_path)
        assert log == tmp_path / "logs" / "stalls.log"
        text = log.read_text()
        assert f"{owner.pid} holds gpu0.lock (WRITE)" in text
        assert f"{waiter.pid} waits for gpu0.lock (READ)" in text
        assert "test_lockholders.py" in text  # this process's own stack
    finally:
        for proc in (owner, waiter):
            if proc is not None:
                proc.kill()
                proc.wait()


def test_no_lock_files_or_no_holds_say_nothing(tmp_path):
    assert lockholders.note(tmp_path) is None  # a CPU run: no lock files
    (tmp_path / "gpu0.lock").touch()
    assert lockholders.holds(tmp_path) == [] and lockholders.note(tmp_path) is None


def test_the_table_s_lines_are_read_by_field(tmp_path):
    """``/proc/locks``'s format, waits marked ``->``; other files and lock kinds are ignored."""
    lock = tmp_path / "gpu0.lock"
    lock.touch()
    inode = lock.stat().st_ino
    table = tmp_path / "locks"
    table.write_text(
        f"1: FLOCK  ADVISORY  READ  41 00:2a:{inode} 0 EOF\n"
        f"1: -> FLOCK  ADVISORY  WRITE 42 00:2a:{inode} 0 EOF\n"
        f"2: POSIX  ADVISORY  WRITE 43 00:2a:{inode} 0 EOF\n"
        "3: FLOCK  ADVISORY  WRITE 44 00:2a:999999999 0 EOF\n"
    )
    assert lockholders.holds(tmp_path, table) == [
        lockholders.Hold("gpu0.lock", 41, "READ", False),
        lockholders.Hold("gpu0.lock", 42, "WRITE", True),
    ]
