"""kbx.gpu.lockholders: who holds and who waits for a run's GPU lock, from the kernel's table of
locks, with real ``flock`` holds of other processes (the lock itself needs no GPU)."""

from __future__ import annotations

import os
import signal
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


def ended(*procs: subprocess.Popen[str] | None) -> None:
    for proc in procs:
        if proc is not None:
            proc.kill()
            proc.wait()


def lock_files(folder: Path) -> Path:
    """A GPU's lock file and its gate, as a run folder has them."""
    (folder / "gpu0.lock.gate").touch()
    lock = folder / "gpu0.lock"
    lock.touch()
    return lock


def test_a_hold_and_the_waits_behind_it_are_named(tmp_path):
    lock = lock_files(tmp_path)
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
        ended(owner, waiter)


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


def catches_usr1(pid: int) -> bool:
    """Whether the process has a handler for SIGUSR1 (``SigCgt`` in its status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGUSR1 - 1) & 1)
    return False


def test_a_baseline_worker_writes_its_stacks_to_its_log_on_request(tmp_path):
    """The real worker (``--serve``, waiting for its first request) registers the request at its
    start; a stall's dump sends it to a worker that holds the lock."""
    log = tmp_path / "worker.log"
    with log.open("w") as err:
        worker = subprocess.Popen(
            [sys.executable, "-m", "kbx.evaluate.baseline_worker", "--serve"],
            stdin=subprocess.PIPE,
            stderr=err,
        )
    try:
        deadline = time.monotonic() + 60
        while not catches_usr1(worker.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert catches_usr1(worker.pid)
        os.kill(worker.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while "File " not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "baseline_worker.py" in log.read_text()
        assert worker.poll() is None  # alive: a report, not an end
    finally:
        worker.kill()
        worker.wait()


def test_the_dump_asks_only_a_holding_baseline_worker_for_its_stacks(tmp_path, monkeypatch):
    lock = tmp_path / "gpu0.lock"
    lock.touch()
    code = (
        "import faulthandler, fcntl, signal, sys, time\n"
        "faulthandler.register(signal.SIGUSR1, all_threads=True)\n"
        "f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_SH)\n"
        "print('held', flush=True); time.sleep(60)\n"
    )
    log = tmp_path / "holder.log"
    with log.open("w") as err:
        owner = subprocess.Popen(
            [sys.executable, "-c", code, str(lock)], stdout=subprocess.PIPE, stderr=err, text=True
        )
    try:
        assert owner.stdout is not None and owner.stdout.readline() == "held\n"
        lockholders.dump(tmp_path)  # not a worker: not signalled
        time.sleep(0.5)
        assert log.read_text() == ""
        named = lockholders.command
        monkeypatch.setattr(
            lockholders,
            "command",
            lambda pid: f"{lockholders.WORKER} --serve" if pid == owner.pid else named(pid),
        )
        lockholders.dump(tmp_path)
        deadline = time.monotonic() + 10
        while "File " not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "File " in log.read_text() and owner.poll() is None
    finally:
        owner.kill()
        owner.wait()


def test_hogged_counts_the_others_waiting_only_while_one_of_the_pids_holds(tmp_path):
    lock = lock_files(tmp_path)
    owner, waiter = holder(lock, "sh"), None
    try:
        assert owner.stdout is not None and owner.stdout.readline() == "held\n"
        assert lockholders.hogged(str(lock), {owner.pid}) == 0  # nobody waits: no harm
        waiter = holder(lock, "ex")
        deadline = time.monotonic() + 10
        while not lockholders.hogged(str(lock), {owner.pid}) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lockholders.hogged(str(lock), {owner.pid}) == 1
        assert lockholders.hogged(str(lock), {owner.pid, waiter.pid}) == 0  # its own wait
        assert lockholders.hogged(str(lock), {os.getpid()}) == 0  # not a holder
        assert lockholders.hogged(str(tmp_path / "gpu1.lock"), {owner.pid}) == 0  # no such lock
    finally:
        ended(owner, waiter)


def test_passing_the_gate_counts_as_holding_and_queueing_at_it_does_not(tmp_path):
    """A shared taker holds the gate exclusively while it passes; a timing holds it shared while
    it waits for the main lock (``gpulock``): only the first keeps the others out."""
    lock = lock_files(tmp_path)
    inode = Path(f"{lock}.gate").stat().st_ino
    table = tmp_path / "locks"
    for held, waits, hogged in (("WRITE", "READ", 1), ("READ", "WRITE", 0)):
        table.write_text(f"1: FLOCK ADVISORY {held} 41 00:2a:{inode} 0 EOF\n")
        with table.open("a") as f:
            f.write(f"1: -> FLOCK ADVISORY {waits} 42 00:2a:{inode} 0 EOF\n")
        assert lockholders.hogged(str(lock), {41}, table) == hogged
