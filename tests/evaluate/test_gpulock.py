"""The per-GPU lock: timing excludes other GPU work and is not starved by it."""

import threading
import time

import pytest

from kbx.evaluate.gpulock import exclusive, holding, shared


def test_a_waiting_timing_goes_before_later_shared_holders(tmp_path):
    lock = str(tmp_path / "gpu0.lock")
    order = []
    first_in, timing_waits = threading.Event(), threading.Event()

    def first_reader():
        with shared(lock):
            first_in.set()
            timing_waits.wait(5)
            time.sleep(0.2)  # the timing is queued behind us by now
            order.append("reader 1 out")

    def timing():
        first_in.wait(5)
        timing_waits.set()
        with exclusive(lock):
            order.append("timing")

    def late_reader():
        timing_waits.wait(5)
        time.sleep(0.1)  # arrives while the timing waits for reader 1
        with shared(lock):
            order.append("reader 2")

    threads = [threading.Thread(target=f) for f in (first_reader, timing, late_reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert order == ["reader 1 out", "timing", "reader 2"]


def test_shared_holders_overlap_and_nesting_takes_nothing(tmp_path):
    lock = str(tmp_path / "gpu0.lock")
    inside = []

    def reader():
        with shared(lock):
            inside.append(1)
            time.sleep(0.3)

    start = time.monotonic()
    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert time.monotonic() - start < 0.8  # together, not one after another
    with exclusive(lock):
        assert holding()
        with shared(lock):  # a launch inside a timing: no deadlock on our own lock
            assert holding()
    assert not holding()
    with shared(lock), pytest.raises(RuntimeError), exclusive(lock):
        pass


def test_long_holds_are_logged_with_what_they_were_for(tmp_path):
    """Every exclusive hold and every shared hold of LOG_MIN_S or more goes to <lock>.log, so a
    GPU run can show what the others queued behind."""
    import json

    from kbx.evaluate import gpulock

    lock = str(tmp_path / "gpu0.lock")
    with exclusive(lock, "timing"):
        pass
    with shared(lock, "launch"):
        pass
    with shared(lock, "outputs out"):
        time.sleep(gpulock.LOG_MIN_S + 0.02)
    lines = [json.loads(x) for x in (tmp_path / "gpu0.lock.log").read_text().splitlines()]
    assert [(x["mode"], x["what"]) for x in lines] == [("ex", "timing"), ("sh", "outputs out")]
    assert lines[1]["held_s"] >= gpulock.LOG_MIN_S and lines[0]["waited_s"] >= 0


def test_inputs_are_built_one_hold_per_input_set():
    from contextlib import contextmanager

    from kbx.evaluate import runner
    from kbx.suite import find

    task = find("Math/rsqrt")
    holds = []

    @contextmanager
    def guard():
        holds.append(1)
        yield

    plan = runner.Plan.build(task, "cpu", bench=False, guard=guard)
    with_refill = sum(r is not None for r in plan.refills)
    assert with_refill > 0
    # every case once, then each case's redraw (kept only where it fits the same buffers)
    assert len(holds) == 2 * len(task.cases)


def test_the_parent_judges_each_case_in_holds_of_its_own(monkeypatch):
    from kbx.evaluate import reference, runner
    from kbx.suite import find

    task = find("Math/rsqrt")
    plan = runner.Plan.build(task, "cpu", bench=False)
    outputs = {
        "cases": [[reference.run_reference(task, i, c.torch_seed, "cpu")] for c, i in plan.cases],
        "refill": [[] for _ in plan.cases],
    }
    taken = []
    real = reference.shared

    def counting(lock, what):
        taken.append(what)
        return real(lock, what)

    monkeypatch.setattr(reference, "shared", counting)
    monkeypatch.setattr(reference, "_cache", {})
    waited = reference.judge(task, outputs, "cpu", None)
    # per case: its reference run, then its comparison
    assert taken == ["check"] * 2 * len(task.cases) and waited == 0.0
