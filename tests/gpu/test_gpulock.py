"""The per-GPU lock: timing excludes other GPU work and is not starved by it."""

import json
import threading
import time

import pytest

from kbx.gpu.gpulock import covered, exclusive, holding, shared
from kbx.gpu.placement import CPU
from tests.conftest import keyed


def run_together(*fns):
    """Each function in a thread of its own, started in order; waits for all of them."""
    threads = [threading.Thread(target=f) for f in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)


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

    run_together(first_reader, timing, late_reader)
    assert order == ["reader 1 out", "timing", "reader 2"]


def test_timings_queued_during_a_drain_run_as_one_batch(tmp_path):
    """Two timings that queue while a shared hold drains both go before a shared holder that
    queued between them: one drain serves both, and the later timing does not wait for a second
    drain behind the newcomer."""
    lock = str(tmp_path / "gpu0.lock")
    order = []
    first_in = threading.Event()

    def first_reader():
        with shared(lock):
            first_in.set()
            time.sleep(0.3)  # both timings and reader 2 are queued by now
            order.append("reader 1 out")

    def timing(delay):
        first_in.wait(5)
        time.sleep(delay)
        with exclusive(lock):
            order.append("timing")
            time.sleep(0.05)

    def late_reader():
        first_in.wait(5)
        time.sleep(0.1)  # after timing 1, before timing 2
        with shared(lock):
            order.append("reader 2")

    run_together(first_reader, lambda: timing(0.0), late_reader, lambda: timing(0.2))
    assert order == ["reader 1 out", "timing", "timing", "reader 2"]


def test_shared_holders_overlap_and_nesting_takes_nothing(tmp_path):
    lock = str(tmp_path / "gpu0.lock")
    inside = []

    def reader():
        with shared(lock):
            inside.append(1)
            time.sleep(0.3)

    start = time.monotonic()
    run_together(reader, reader, reader)
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

    from kbx.gpu import gpulock

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

    from kbx.sandbox.child import runner
    from kbx.suite import find

    task = find("Math/rsqrt")
    holds = []

    @contextmanager
    def guard():
        holds.append(1)
        yield

    plan = runner.Plan.build(task, CPU, bench=False, guard=guard)
    with_refill = sum(r is not None for r in plan.refills)
    assert with_refill > 0
    # every case once, then each case's redraw (kept only where it fits the same buffers)
    assert len(holds) == 2 * len(task.cases)


def test_the_parent_judges_each_case_in_holds_of_its_own(monkeypatch):
    from kbx.evaluate import check as reference
    from kbx.evaluate import references
    from kbx.sandbox.child import runner
    from kbx.suite import find

    task = find("Math/rsqrt")
    plan = runner.Plan.build(task, CPU, bench=False)
    outputs = {
        "cases": [[references.run_reference(task, i, c.torch_seed, "cpu")] for c, i in plan.cases],
        "refill": [[] for _ in plan.cases],
    }
    taken = []
    real = reference.gpu_ops_locked

    def counting(lock, what):
        taken.append(what)
        return real(lock, what)

    monkeypatch.setattr(reference, "gpu_ops_locked", counting)
    monkeypatch.setattr(references, "gpu_ops_locked", counting)
    waited = reference.judge(task, keyed(outputs))
    # per case: its inputs, its reference run, then its comparison
    check = f"check {task.id}"  # the lock's log names the task
    assert taken == ["check inputs", check, check] * len(task.cases) and waited == 0.0


def test_property_checks_of_correctness_cases_run_on_cpu_copies_outside_any_hold(monkeypatch):
    """A checked task's correctness cases: the inputs are copied to the CPU in a hold of their
    own, and the property check runs on those copies with no hold around it."""
    import dataclasses

    import torch

    from kbx.evaluate import check as reference
    from kbx.evaluate import references
    from kbx.sandbox.child import runner
    from kbx.suite import find

    task = find("Math/airy_ai")
    plan = runner.Plan.build(task, CPU, bench=False)
    outputs = {
        "cases": [[references.run_reference(task, i, c.torch_seed, "cpu")] for c, i in plan.cases],
        "refill": [[] for _ in plan.cases],
    }
    taken, seen = [], []
    real = reference.gpu_ops_locked

    def counting(lock, what):
        taken.append(what)
        return real(lock, what)

    def check(inputs, got):
        seen.append((taken[-1], inputs.args[0].device))
        return task.check(inputs, got)

    monkeypatch.setattr(reference, "gpu_ops_locked", counting)
    monkeypatch.setattr(references, "gpu_ops_locked", counting)
    reference.judge(dataclasses.replace(task, check=check), keyed(outputs))
    # per case: its inputs, its reference run, then the copies; the check after them, unlocked
    check_ref = f"check {task.id}"
    assert taken == ["check inputs", check_ref, "check inputs"] * len(task.cases)
    assert seen == [("check inputs", torch.device("cpu"))] * len(task.cases)
    # the copies keep everything that is not a tensor as it was (a list stays a list)
    x = torch.arange(3.0)
    moved = reference.on_cpu(runner.Inputs((x, [1, 2]), {"dims": [0], "eps": 1e-5}))
    assert torch.equal(moved.args[0], x) and moved.args[1] == [1, 2]
    assert moved.kwargs == {"dims": [0], "eps": 1e-5}


def test_a_long_shared_hold_makes_way_for_a_waiting_timing(tmp_path, monkeypatch):
    """A shared holder that calls make_way at its safe points lets a timing in within one step
    of work (after finishing its GPU work), then queues again behind it; without a timing, or
    while the hold is young, it keeps the hold."""
    from kbx.gpu import gpulock

    monkeypatch.setattr(gpulock, "LOG_MIN_S", 0.0)
    lock = str(tmp_path / "gpu0.lock")
    events = []
    timing_asks = threading.Event()

    def holder():
        with shared(lock, "check"):
            assert not gpulock.make_way(lambda: events.append("synced"))  # young: kept
            time.sleep(gpulock.YIELD_AFTER_S)
            assert not gpulock.make_way(lambda: events.append("synced"))  # nobody waits
            timing_asks.set()
            end = time.monotonic() + 3.0
            while time.monotonic() < end and "timing" not in events:
                time.sleep(0.01)  # a step of work, then a safe point
                if gpulock.make_way(lambda: events.append("synced")):
                    events.append("made way")
                    assert gpulock.holding()  # queued again and got it back
            events.append("holder done")

    def timing():
        timing_asks.wait(5)
        time.sleep(0.05)
        asked = time.monotonic()
        with exclusive(lock, "timing"):
            events.append("timing")
            events.append(round(time.monotonic() - asked, 3))

    run_together(holder, timing)
    assert events[:3] == ["synced", "timing", events[2]]
    assert events[2] < 0.5  # got in at the next safe point, not after the 3 s of holding
    assert events[3:] == ["made way", "holder done"]
    logged = [json.loads(x) for x in (tmp_path / "gpu0.lock.log").read_text().splitlines()]
    # the hold up to the moment it made way, the timing, the rest of the hold
    assert sorted((x["mode"], x["what"]) for x in logged) == [
        ("ex", "timing"),
        ("sh", "check"),
        ("sh", "check"),
    ]


def test_make_way_does_nothing_inside_an_exclusive_or_a_nested_hold(tmp_path):
    from kbx.gpu import gpulock

    lock = str(tmp_path / "gpu0.lock")
    with exclusive(lock, "timing"):
        time.sleep(gpulock.YIELD_AFTER_S)
        assert not gpulock.make_way(lambda: None)
        with shared(lock, "launch"):  # a launch inside the timing: the timing's hold
            assert not gpulock.make_way(lambda: None)
    assert not gpulock.make_way(lambda: None)  # no hold at all


def test_autotuning_times_each_config_in_an_exclusive_hold(tmp_path, monkeypatch):
    """Configs are timed like candidates: nothing else on the GPU meanwhile (on the CPU the
    autotuner's benchmark is replaced by one that reports the hold it runs in)."""
    import torch
    from triton.runtime.autotuner import Autotuner

    from kbx.gpu import gpulock
    from kbx.sandbox.child import launches

    seen = []
    monkeypatch.setattr(
        Autotuner, "_bench", lambda self, *a, config, **k: seen.append(gpulock._held.mode)
    )
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    launches.lock_autotuner(str(tmp_path / "gpu0.lock"))

    class Fn:
        def run(self, *args, **kwargs):  # the compile, unlocked, before the timed config
            seen.append(("compile", kwargs.get("warmup"), gpulock.holding()))

    class Tuner:
        fn = Fn()

    class Config:
        def all_kwargs(self):
            return {"BLOCK": 128}

    tuner = Tuner()
    Autotuner._bench(tuner, config=Config())
    assert seen == [("compile", True, False), "ex"] and not gpulock.holding()
    assert not hasattr(tuner, "_do_bench")  # an autotuner without one: left alone
    tuner._do_bench = None  # Triton's default benchmark: the shorter budget instead
    tuner.do_bench = "cached before"  # as Triton's cached_property keeps it
    Autotuner._bench(tuner, config=Config())
    assert "do_bench" not in vars(tuner)
    assert tuner._do_bench.keywords == {
        "warmup": launches.AUTOTUNE_WARMUP_MS,
        "rep": launches.AUTOTUNE_REP_MS,
    }
    own = tuner._do_bench = lambda call, quantiles: [1.0]  # the kernel's own: kept
    Autotuner._bench(tuner, config=Config())
    assert tuner._do_bench is own


def test_a_run_that_times_nothing_autotunes_briefly_under_a_shared_hold(tmp_path, monkeypatch):
    """Correctness only (``timed`` off): no timing anywhere needs the GPU to itself for a
    config, so configs are benchmarked briefly beside other candidates' work (never beside a
    timing: a shared hold); the choice decides no figure."""
    import torch
    from triton.runtime.autotuner import Autotuner

    from kbx.gpu import gpulock
    from kbx.sandbox.child import launches

    seen = []
    monkeypatch.setattr(
        Autotuner, "_bench", lambda self, *a, config, **k: seen.append(gpulock._held.mode)
    )
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    launches.lock_autotuner(str(tmp_path / "gpu0.lock"), timed=False)

    class Fn:
        def run(self, *args, **kwargs):
            pass

    class Config:
        def all_kwargs(self):
            return {"BLOCK": 128}

    class Tuner:
        fn = Fn()
        _do_bench = None

    tuner = Tuner()
    Autotuner._bench(tuner, config=Config())
    assert seen == ["sh"] and not gpulock.holding()
    assert tuner._do_bench.keywords == {
        "warmup": launches.UNTIMED_WARMUP_MS,
        "rep": launches.UNTIMED_REP_MS,
    }


def test_another_thread_s_work_inside_its_process_s_timing_turn_is_covered(tmp_path):
    """A timing turn covers every thread of its process (``covered``); a shared hold covers
    only its own thread, and nothing is left covered after either."""
    lock = str(tmp_path / "gpu0.lock")
    seen = []

    def look():
        seen.append((covered(), holding()))

    for hold in (exclusive, shared):
        with hold(lock):
            with hold(lock):  # nested: one turn
                run_together(look)
            run_together(look)
        run_together(look)
    assert seen == [(True, False)] * 2 + [(False, False)] * 4
    assert not covered()


def test_kbx_s_frozen_copies_see_the_process_s_timing_turns(tmp_path):
    """The child runs frozen copies of kbx's functions (``bound``), whose lists and dicts are
    copies of their own: the count of turns must be shared with the original module."""
    import kbx.sandbox.child.launches  # noqa: F401 - frozen with the rest
    from kbx.gpu import gpulock
    from kbx.sandbox.child import bound

    frozen = bound.freeze().get("kbx.sandbox.child.launches", "covered")
    assert frozen is not gpulock.covered
    seen = []
    with exclusive(str(tmp_path / "gpu0.lock")):
        run_together(lambda: seen.append(frozen()))
    assert seen == [True] and not frozen()
