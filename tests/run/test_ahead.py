"""Compile stages ahead of GPU jobs (``kbx.run.ahead``): a stage not begun is dropped when its job
comes, a running one is waited for, one stage per task and code, and a failing stage costs
nothing but its figures."""

import threading
import time

from kbx.core.candidate import Candidate
from kbx.run.ahead import Ahead
from kbx.suite.verdict import Verdict


def candidate(task: str = "Math/add", code: str = "x = 1\n") -> Candidate:
    return Candidate(source="c.py", task_id=task, code=code)


class Gate:
    """A stage that waits for ``release`` and counts its runs by task."""

    def __init__(self) -> None:
        self.release, self.started = threading.Event(), threading.Event()
        self.runs: list[str] = []

    def __call__(self, c: Candidate) -> dict[str, float]:
        self.runs.append(c.task_id)
        self.started.set()
        assert self.release.wait(10)
        return {"ahead": 1.0}


def test_a_stage_not_begun_is_dropped_and_never_runs():
    gate = Gate()
    ahead = Ahead(gate, workers=1, wait_s=10)
    try:
        ahead.offer(candidate("Math/add"))  # takes the one worker
        assert gate.started.wait(5)
        ahead.offer(candidate("Math/sub"))  # queued behind it
        assert ahead.claim(candidate("Math/sub")) == {}
        gate.release.set()
        figures = ahead.claim(candidate("Math/add"))
        assert figures["ahead"] == 1.0 and figures["ahead_wait"] >= 0.0
        time.sleep(0.2)
        assert gate.runs == ["Math/add"]
    finally:
        gate.release.set()
        ahead.close()


def test_a_running_stage_is_waited_for():
    gate = Gate()
    ahead = Ahead(gate, workers=1, wait_s=10)
    try:
        ahead.offer(candidate())
        assert gate.started.wait(5)
        threading.Timer(0.5, gate.release.set).start()
        figures = ahead.claim(candidate())
        assert figures["ahead"] == 1.0
        assert figures["ahead_wait"] >= 0.4
    finally:
        gate.release.set()
        ahead.close()


def test_one_stage_per_task_and_code():
    gate = Gate()
    gate.release.set()
    ahead = Ahead(gate, workers=2, wait_s=10)
    try:
        for _ in range(3):
            ahead.offer(candidate())
        ahead.offer(candidate(code="y = 2\n"))
        ahead.offer(candidate(task="Math/sub"))
        ahead.pool.shutdown(wait=True)
        assert sorted(gate.runs) == ["Math/add", "Math/add", "Math/sub"]
    finally:
        ahead.close()


def test_a_failing_or_slow_stage_gives_only_its_wait():
    def broken(c: Candidate) -> dict[str, float]:
        raise RuntimeError("kbx's own fault in the stage")

    ahead = Ahead(broken, workers=1, wait_s=10)
    try:
        ahead.offer(candidate())
        time.sleep(0.2)
        assert set(ahead.claim(candidate())) == {"ahead_wait"}
    finally:
        ahead.close()
    gate = Gate()
    slow = Ahead(gate, workers=1, wait_s=0.3)
    try:
        slow.offer(candidate())
        assert gate.started.wait(5)
        assert set(slow.claim(candidate())) == {"ahead_wait"}
    finally:
        gate.release.set()
        slow.close()


def test_a_candidate_decided_before_its_child_gets_no_stage():
    gate = Gate()
    gate.release.set()
    ahead = Ahead(gate, workers=1, wait_s=10)
    try:
        decided = Candidate("c.py", "Math/add", "x", problem=(Verdict.NO_TRITON, "no kernel"))
        ahead.offer(decided)
        ahead.pool.shutdown(wait=True)
        assert gate.runs == [] and ahead.claim(decided) == {}
    finally:
        ahead.close()
