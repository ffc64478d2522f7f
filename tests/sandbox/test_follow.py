"""kbx.sandbox.follow: the parts of the run stage a result records (``stage_s``): the first
correctness case's wall time, measured by the parent, and the compile and op-evidence seconds
the child reports with ``done`` (figures only: names the parent does not know are dropped); a
child that holds the GPU lock while others wait, with real ``flock`` holds in other processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbx.core.config import Limits
from kbx.gpu import lockholders
from kbx.sandbox.expect import Expected
from kbx.sandbox.follow import Follower
from kbx.sandbox.wire.channel import encode, parse_line
from kbx.suite.verdict import Reject, Verdict

SHA = "ab" * 32


def said(follower: Follower, event: str, **fields: object) -> bool:
    return follower.take(parse_line(encode(event, **fields)))


def test_the_first_case_and_the_child_s_parts_are_kept_as_parts_of_the_run():
    expected = Expected(runs={("cases", 0): 1, ("cases", 1): 1}, bench=(), bench_total=0)
    follower = Follower(os.getpid(), expected, Limits(), "cpu", perf=False, triton=False)
    said(follower, "ready", parts={"imports": 0.1})
    said(follower, "imported")
    said(follower, "case", kind="cases", index=0)
    follower.use_lock("gpu0.lock")  # a run with a GPU lock (never read here)
    said(follower, "wait")  # a wait for the GPU lock inside the first case is part of it
    said(follower, "go")
    said(follower, "output", kind="cases", index=0, file="cases-0.safetensors", sha256=SHA, size=8)
    said(follower, "case", kind="cases", index=1)
    first = follower.got.spent["run_first"]
    said(follower, "output", kind="cases", index=1, file="cases-1.safetensors", sha256=SHA, size=8)
    parts = {"compile": 1.5, "evidence": 0.25, "other": 9.0}
    assert said(follower, "done", timings=[], parts=parts)
    spent = follower.got.spent
    assert 0.0 <= first == spent["run_first"] <= spent["run"] + spent.get("lock", 0.0)
    assert spent["run_compile"] == 1.5 and spent["run_evidence"] == 0.25
    assert "run_other" not in spent and "other" not in spent


# A "child" that forks a grandchild, which holds the lock as a candidate's kernel that never ends
# would hold it (a shared launch hold), and waits.
HOLDER = """
import fcntl, os, sys, time
if os.fork() == 0:
    f = open(sys.argv[1], "a")
    fcntl.flock(f, fcntl.LOCK_SH)
    print("held", flush=True)
    time.sleep(60)
    os._exit(0)
os.wait()
"""
WAITER = "import fcntl, sys; fcntl.flock(open(sys.argv[1], 'a'), fcntl.LOCK_EX)"


def spawn(code: str, lock: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, str(lock)], stdout=subprocess.PIPE, text=True
    )


def follow_for(follower: Follower, seconds: float) -> None:
    """The parent's looks at the child's limits, as ``next_message`` makes them."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        follower.check_limits()
        time.sleep(0.1)


@pytest.mark.parametrize("others_wait", [True, False])
def test_a_child_that_holds_the_gpu_lock_while_others_wait_times_out(tmp_path, others_wait):
    """A kernel that never ends holds its launch's hold: every timing and check on the GPU
    waits behind it.  Past ``Limits.hold_s`` of that the child is ``timeout``, whatever its
    stage's own limits (here a wait for the GPU lock: 1800 s); holding with nobody waiting
    harms nobody and is left to those limits."""
    lock = tmp_path / "gpu0.lock"
    lock.touch()
    (tmp_path / "gpu0.lock.gate").touch()
    child = spawn(HOLDER, lock)
    waiter = None
    try:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        if others_wait:
            waiter = spawn(WAITER, lock)
            deadline = time.monotonic() + 10
            while not lockholders.hogged(str(lock), {child.pid}) and time.monotonic() < deadline:
                time.sleep(0.05)  # the waiter queued: every look from here on sees it
        expected = Expected(runs={("cases", 0): 1}, bench=(), bench_total=0)
        limits = Limits(hold_s=2.0)
        follower = Follower(child.pid, expected, limits, "cuda", perf=False, triton=True)
        follower.use_lock(str(lock))
        said(follower, "ready", parts={})
        said(follower, "imported")
        said(follower, "wait")
        if not others_wait:
            follow_for(follower, 4.5)
            return
        follow_for(follower, 1.8)
        said(follower, "go")
        said(follower, "case", kind="cases", index=0)  # each case its own hold limit
        said(follower, "wait")
        follow_for(follower, 1.8)
        with pytest.raises(Reject) as got:
            for _ in range(10):  # forged waits and goes move nothing
                said(follower, "go")
                said(follower, "wait")
                follow_for(follower, 1.0)
        assert got.value.verdict is Verdict.TIMEOUT
        assert "held the GPU lock for " in got.value.detail
        assert "during a wait for the GPU lock while 1 other processes waited" in got.value.detail
        assert "(wall clock)" not in got.value.detail  # its own doing: not run again alone
    finally:
        for proc in (child, waiter):
            if proc is not None:
                proc.kill()
                proc.wait()
        subprocess.run(["pkill", "-f", str(lock)], check=False)  # the grandchild
