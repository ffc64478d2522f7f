"""The timing engine's statistics, with a fake clock (the CUDA clock needs a GPU)."""

import itertools
import json
import os
import random
import subprocess
import sys
import time

from kbx.gpu.clock import (
    SLOW_CALL_MS,
    SLOW_MIN_REPS,
    VERY_SLOW_CALL_MS,
    VERY_SLOW_MIN_REPS,
    Warm,
    measure,
    median_ci,
    warm_up,
)
from kbx.gpu.placement import CPU, Placement
from tests.conftest import ROOT, keyed


def test_median_ci_brackets_the_median():
    xs = list(range(1, 102))
    lo, hi = median_ci(xs)
    assert lo < 51 < hi
    assert hi - lo < 25


def test_measure_stops_when_the_interval_is_tight():
    clock = lambda call: 1.0 + random.Random(len(str(call))).random() * 1e-4  # noqa: E731
    t = measure([lambda: None], clock)
    assert t.reps == 10 and abs(t.median_ms - 1.0) < 1e-3
    assert t.ci_low_ms <= t.median_ms <= t.ci_high_ms


def test_measure_rotates_calls_and_respects_max_reps():
    seen = []
    noisy = itertools.cycle([1.0, 2.0, 3.0, 10.0])

    def clock(call):
        seen.append(call)
        return next(noisy)

    calls = [lambda: 1, lambda: 2, lambda: 3]
    t = measure(calls, clock, budget_ms=1e9, max_reps=50)
    assert t.reps == 50
    assert seen[:6] == calls + calls


def test_warm_up_calls_every_set_then_keeps_warming_fast_calls():
    calls_made = []
    calls = [lambda i=i: calls_made.append(i) for i in range(4)]
    warm = warm_up(calls, min_ms=5.0, sync=lambda: None)
    assert (warm.sets, warm.slow) == (4, False)
    assert calls_made[:4] == [0, 1, 2, 3] and len(calls_made) > 4


def test_warm_up_stops_at_two_sets_for_slow_calls():
    """A call of SLOW_CALL_MS or more (after the first, which may compile) is timed over 2 input
    sets with fewer repetitions: the exclusive GPU turn is not spent warming 8 copies."""
    calls_made = []

    def slow(i):
        calls_made.append(i)
        time.sleep(SLOW_CALL_MS / 1000 * 1.2)

    calls = [lambda i=i: slow(i) for i in range(8)]
    warm = warm_up(calls, sync=lambda: None)
    assert (warm.sets, warm.slow) == (2, True)
    assert calls_made == [0, 1]
    assert warm.min_reps == SLOW_MIN_REPS


def test_calls_of_a_quarter_second_or_more_get_the_fewest_repetitions():
    """Eager torch.linalg baselines take seconds a call: each repetition holds the GPU's
    exclusive turn, so they stop at VERY_SLOW_MIN_REPS."""
    assert Warm(2, True, VERY_SLOW_CALL_MS).min_reps == VERY_SLOW_MIN_REPS
    assert Warm(2, True, VERY_SLOW_CALL_MS - 1).min_reps == SLOW_MIN_REPS
    assert Warm(8, False).min_reps == 10
    times = iter([400.0, 410.0, 405.0, 401.0])  # not within +-1%: the budget ends it
    timing = measure(
        [lambda: None], lambda call: next(times), budget_ms=0.0, min_reps=VERY_SLOW_MIN_REPS
    )
    assert timing.reps == VERY_SLOW_MIN_REPS and timing.median_ms == 405.0


def stand_in_clock(monkeypatch, passes):
    """``time_calls`` replaced by ``passes`` untimed calls rotating over 2 input sets, each
    prepared as the real timing prepares it; it reports 1 ms."""
    from kbx.gpu import benchtime
    from kbx.gpu import clock as timing
    from kbx.suite import tensors

    def cpu_time_calls(calls, prepare=None, budget_ms=0.0, warm_hold=None, turn=None, rel_ci=0.01):
        for i in range(passes):
            prepare(i % len(calls))
            calls[i % len(calls)]()
        return timing.Timing(1.0, 0.9, 1.1, 0.9, passes)

    def cpu_time_fixed(call, prepare, reps):
        for i in range(reps):
            prepare(i)
            call()
        return 1.0

    monkeypatch.setattr(timing, "time_calls", cpu_time_calls)
    monkeypatch.setattr(timing, "time_fixed", cpu_time_fixed)
    monkeypatch.setattr(
        benchtime,
        "input_sets",
        lambda inputs: [
            (tensors.clone(inputs.args), tensors.clone(dict(inputs.kwargs))) for _ in range(2)
        ],
    )


def test_baseline_warm_up_and_timed_calls_take_their_own_holds(monkeypatch):
    """A baseline warms up under one hold (shared) and is timed under another (exclusive): the
    clock never runs in the warm-up's hold, nor a warm-up call in the turn."""
    import contextlib

    import torch

    from kbx.gpu import clock as timing

    held: list[str] = []
    seen: list[tuple[str, str]] = []

    @contextlib.contextmanager
    def hold(name):
        held.append(name)
        yield
        held.pop()

    def clock(call):
        seen.append(("timed", held[-1] if held else ""))
        call()
        return 1.0

    monkeypatch.setattr(timing, "cuda_clock", lambda: clock)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    calls = [lambda: seen.append(("call", held[-1] if held else ""))]
    got = timing.time_calls(calls, warm_hold=lambda: hold("shared"), turn=lambda: hold("exclusive"))
    assert got.median_ms == 1.0 and got.reps == 10
    assert [h for what, h in seen if what == "timed"] == ["exclusive"] * 10
    calls = [h for what, h in seen if what == "call"]
    first_timed = calls.index("exclusive")
    assert first_timed >= 1 and set(calls[:first_timed]) == {"shared"}  # the warm-up
    assert calls[first_timed:] == ["exclusive"] * 10
    assert held == []


def test_timed_calls_see_alternating_contents_so_address_caches_go_stale(monkeypatch):
    """time_case on the CPU with a stand-in clock: an honest entry's last output matches the
    contents it saw; a cache keyed on the input address returns a stale one."""
    import torch

    from kbx.gpu import benchtime
    from kbx.suite import find
    from kbx.suite.task import Inputs

    stand_in_clock(monkeypatch, passes=7)
    task = find("Math/rsqrt")
    case = task.cases[0]
    a = Inputs((torch.full((8,), 4.0), None))
    b = Inputs((torch.full((8,), 16.0), None))

    _, out, variant = benchtime.time_case(task, case, a, lambda x, out=None: torch.rsqrt(x), b)
    assert torch.equal(out[0], torch.rsqrt((a, b)[variant].args[0]))

    cache = {}

    def cached(x, out=None):
        return cache.setdefault(x.data_ptr(), torch.rsqrt(x))

    _, stale, variant = benchtime.time_case(task, case, a, cached, b)
    assert not torch.equal(stale[0], torch.rsqrt((a, b)[variant].args[0]))


def test_time_bench_outputs_are_judged_against_the_contents_they_saw(monkeypatch):
    """The child's timing loop with a stand-in clock, then the parent's judge of the timed
    outputs: an honest entry passes, one that caches by input address is caught."""
    import dataclasses

    import pytest
    import torch

    from kbx.evaluate import check as reference
    from kbx.sandbox.child import runner
    from kbx.suite import find
    from kbx.suite.task import Case
    from kbx.suite.verdict import Reject, Verdict

    stand_in_clock(monkeypatch, passes=5)
    task = dataclasses.replace(find("Math/rsqrt"), bench=(Case((1000,), seed=11),))
    plan = runner.Plan.build(task, Placement(timed=True), bench=True)
    assert plan.bench_refills[0] is not None

    class Quiet:
        def send(self, event, **fields):
            pass

    honest = lambda x, out=None: torch.rsqrt(x)  # noqa: E731
    timings, timed, variants = runner.time_bench(task, plan, honest, Quiet())
    assert timings[0]["median_ms"] == 1.0 and timings[0]["reps"] == 5
    assert "profiler_ms" not in timings[0] and timings[0]["fresh_ms"] == 1.0
    assert list(timings[0]["phases_ms"]) == ["sets", "timing", "probe", "profile", "final"]
    reference.judge(task, keyed({"timed": timed}), variants=dict(enumerate(variants)))

    cache = {}
    cached = lambda x, out=None: cache.setdefault(x.data_ptr(), torch.rsqrt(x))  # noqa: E731
    _, timed, variants = runner.time_bench(task, plan, cached, Quiet())
    with pytest.raises(Reject) as caught:
        reference.judge(task, keyed({"timed": timed}), variants=dict(enumerate(variants)))
    assert caught.value.verdict == Verdict.MISMATCH


def test_the_probe_times_contents_never_seen_so_a_content_cache_shows(monkeypatch):
    """time_case's probe on the CPU, with a clock that charges 1 ms for a call that computed and
    0.05 ms for one that did not: a cache keyed on contents is fast in the timed calls, which
    repeat contents, and slow on the probe's; an honest entry is the same on both, and the
    probe leaves the buffers of the final (re-checked) call alone."""
    import torch

    from kbx.gpu import benchtime
    from kbx.gpu import clock as timing
    from kbx.suite import find, tensors
    from kbx.suite.task import Inputs

    computed = {"n": 0}

    def clock(call):
        before = computed["n"]
        call()
        return 1.0 if computed["n"] > before else 0.05

    monkeypatch.setattr(timing, "cuda_clock", lambda: clock)
    monkeypatch.setattr(
        timing, "warm_up", lambda calls, prepare=None, **k: timing.Warm(len(calls), False)
    )
    monkeypatch.setattr(
        benchtime,
        "input_sets",
        lambda inputs: [
            (tensors.clone(inputs.args), tensors.clone(dict(inputs.kwargs))) for _ in range(2)
        ],
    )
    task = find("Math/rsqrt")
    case = task.cases[0]
    a = Inputs((torch.rand(64) + 0.5, None))
    b = Inputs((torch.rand(64) + 2.0, None))

    def honest(x, out=None):
        computed["n"] += 1
        return torch.rsqrt(x)

    t, out, variant = benchtime.time_case(task, case, a, honest, b, probe=True)
    # as fast on new contents as on seen ones: no seen calls beside the probe
    assert t.median_ms == 1.0 and (t.fresh_ms, t.seen_ms) == (1.0, None)
    assert torch.equal(out[0], torch.rsqrt((a, b)[variant].args[0]))

    cache: dict[float, torch.Tensor] = {}

    def by_contents(x, out=None):
        key = float(x.sum())
        if key not in cache:
            computed["n"] += 1
            cache[key] = torch.rsqrt(x)
        return cache[key]

    t, out, variant = benchtime.time_case(task, case, a, by_contents, b, probe=True)
    assert t.median_ms == 0.05 and (t.fresh_ms, t.seen_ms) == (1.0, 0.05)
    assert torch.equal(out[0], torch.rsqrt((a, b)[variant].args[0]))  # correct, only cached


def test_the_probe_runs_in_the_seen_calls_buffers_where_contents_alternate(monkeypatch):
    """With two contents the fresh calls use set 0, the buffers of the seen calls beside them
    (a spare set's new memory ran honest kernels 2.1-2.3x slower on the H200); with one, a
    spare set, so that a cache keyed on addresses misses there.  The probe comes before the
    profiler pass, and the final call still sees the contents it is judged against."""
    import torch

    from kbx.gpu import benchtime
    from kbx.gpu import clock as timing
    from kbx.suite import find, tensors
    from kbx.suite.task import Inputs

    monkeypatch.setattr(timing, "cuda_clock", lambda: lambda call: (call(), 1.0)[1])
    monkeypatch.setattr(
        timing, "warm_up", lambda calls, prepare=None, **k: timing.Warm(len(calls), False)
    )
    sets: list = []

    def input_sets(inputs):
        sets[:] = [(tensors.clone(inputs.args), tensors.clone(dict(inputs.kwargs))) for _ in "ab"]
        return list(sets)

    monkeypatch.setattr(benchtime, "input_sets", input_sets)
    order: list[str] = []
    monkeypatch.setattr(
        benchtime, "profiler_ms", lambda calls, prepare: (order.append("profile"), 1.0)[1]
    )
    real_fresh = benchtime.fresh_ms

    def fresh_ms(*args, **kwargs):
        order.append("probe")
        return real_fresh(*args, **kwargs)

    monkeypatch.setattr(benchtime, "fresh_ms", fresh_ms)
    probed: list[int] = []  # the buffers each fresh call got new contents in
    scale = benchtime.scale_floats
    monkeypatch.setattr(
        benchtime, "scale_floats", lambda ts, f: (probed.append(ts[0].data_ptr()), scale(ts, f))
    )
    task = find("Math/rsqrt")
    a = Inputs((torch.rand(64) + 0.5, None))
    b = Inputs((torch.rand(64) + 2.0, None))
    honest = lambda x, out=None: torch.rsqrt(x)  # noqa: E731
    for alt in (b, None):
        order.clear()
        probed.clear()
        _, out, variant = benchtime.time_case(
            task, task.cases[0], a, honest, alt, probe=True, profile=True
        )
        assert order == ["probe", "profile"]
        own = {t[0][0].data_ptr() for t in sets}
        if alt is not None:
            assert set(probed) == {sets[0][0][0].data_ptr()}
        else:
            assert probed and not set(probed) & own
        assert torch.equal(out[0], torch.rsqrt((a, b)[variant].args[0]))


def test_keyword_tensors_get_their_own_copies_so_the_probe_leaves_the_case_alone(monkeypatch):
    """A tensor passed by keyword (a loss's class weights) is copied per input set like the
    positional ones: the probe's scaled contents never reach the case, and the final call's
    output matches the contents it was given (on the H200 a shared keyword tensor made two
    reference solutions fail their re-check)."""
    import torch

    from kbx.gpu import benchtime
    from kbx.suite import find, tensors
    from kbx.suite.task import Inputs

    w = torch.rand(16) + 0.5
    copied = tensors.clone({"weight": w, "n": 3})
    assert copied["weight"] is not w and torch.equal(copied["weight"], w) and copied["n"] == 3

    stand_in_clock(monkeypatch, passes=6)
    task = find("Math/rsqrt")
    a = Inputs((torch.rand(16) + 0.5, None), {"weight": torch.rand(16) + 0.5})
    b = Inputs((torch.rand(16) + 2.0, None), {"weight": torch.rand(16) + 2.0})
    kept = tensors.clone(a.kwargs["weight"])
    _, out, variant = benchtime.time_case(
        task, task.cases[0], a, lambda x, out, weight: x * weight, b, probe=True
    )
    seen = (a, b)[variant]  # rsqrt's `out` argument makes the output (result, (out,))
    assert torch.equal(out[0], seen.args[0] * seen.kwargs["weight"])
    assert torch.equal(a.kwargs["weight"], kept)


def test_timed_benchmark_cases_are_called_but_their_first_outputs_not_copied_out():
    """A benchmark case that will be timed is judged on its timed output: run_cases still calls
    it (a crash at full size is caught there) but keeps no copy of its output, unless the task
    is random (its seed rules are checked on those calls)."""
    import dataclasses

    import torch

    from kbx.sandbox.child import runner
    from kbx.suite import find
    from kbx.suite.task import Case

    class Quiet:
        def send(self, event, **fields):
            pass

    class Counter:
        required, launches = False, 0

    task = dataclasses.replace(find("Math/rsqrt"), bench=(Case((1000,), seed=11),))
    calls = []

    def entry(x, out=None):
        calls.append(x.numel())
        return torch.rsqrt(x)

    timed = runner.Plan.build(task, Placement(timed=True), bench=True)
    got = runner.run_cases(task, timed, entry, Counter(), Quiet())
    assert 1000 in calls and got["bench"] == [[]]
    assert all(isinstance(outs[0][0], torch.Tensor) for outs in got["cases"])
    untimed = runner.Plan.build(task, CPU, bench=True)
    got = runner.run_cases(task, untimed, entry, Counter(), Quiet())
    assert isinstance(got["bench"][0][0][0], torch.Tensor)


def test_a_probe_round_that_stalled_is_retried_on_new_contents(monkeypatch):
    """An honest candidate whose first probe round met a stall of the GPU gets another round on
    new contents; a content cache is slow on every round and stays suspect."""
    import torch

    from kbx.gpu import benchtime
    from kbx.gpu import clock as timing
    from kbx.suite.task import Inputs

    rounds: list[float] = []

    def time_fixed(call, prepare, reps):
        scales = []
        for k in range(reps):
            prepare(k)
            scales.append(float(x[0]))
            call()
        rounds.append(min(scales))
        return times.pop(0)

    x = torch.ones(4)
    monkeypatch.setattr(timing, "time_fixed", time_fixed)
    inputs = Inputs((torch.ones(4),))

    def entry(t):
        x.copy_(t)  # what the probe handed over

    times = [5.0, 1.0, 1.0]  # a stall, then the real cost
    assert benchtime.fresh_ms(inputs, entry, 0, timed_ms=1.0) == (1.0, None)
    assert len(rounds) == 2 and rounds[1] < rounds[0]  # the second round saw new contents

    times, rounds[:] = [5.0] * 9, []  # a cache: slow on new contents every round
    assert benchtime.fresh_ms(inputs, entry, 0, timed_ms=1.0) == (5.0, None)
    assert len(rounds) == 1 + benchtime.PROBE_ROUNDS  # the first, then the retries
    assert len(set(rounds)) == len(rounds)  # new contents each round
    assert benchtime.looks_reused(1.0, 5.0) and not benchtime.looks_reused(1.0, 1.5)


def test_seen_calls_beside_the_probe_tell_a_stall_from_a_cache(monkeypatch):
    """After a first round that looks like reuse, each probe round is flanked by calls on seen
    contents: a stall that lasts the whole probe slows them as much as the fresh calls (one
    more round, not suspect); a content cache keeps them fast, and every round stays
    suspect.  An honest first round needs no seen calls."""
    import torch

    from kbx.gpu import benchtime
    from kbx.gpu import clock as timing
    from kbx.suite.task import Inputs

    made: list[str] = []

    def time_fixed(call, prepare, reps):
        for k in range(reps):
            prepare(k)
            call()
        kind = "seen" if call is seen_call else "fresh"
        made.append(kind)
        return cost[kind]

    def seen_call() -> None:
        pass

    monkeypatch.setattr(timing, "time_fixed", time_fixed)
    inputs = Inputs((torch.ones(4),))
    cost = {"seen": 5.0, "fresh": 5.2}  # the GPU slow all along, for both kinds of call
    got = benchtime.fresh_ms(inputs, lambda t: None, 0, 1.0, (seen_call, lambda k: None))
    assert got == (5.2, 5.0) and made == ["fresh", "seen", "fresh", "seen"]
    assert not benchtime.suspect(1.0, *got)

    made.clear()
    cost = {"seen": 1.0, "fresh": 5.0}  # cached on contents: fast on seen ones only
    got = benchtime.fresh_ms(inputs, lambda t: None, 0, 1.0, (seen_call, lambda k: None))
    assert got == (5.0, 1.0) and len(made) == 1 + 3 * benchtime.PROBE_ROUNDS
    assert benchtime.suspect(1.0, *got)

    made.clear()
    cost = {"seen": 1.0, "fresh": 1.1}  # honest: the first round alone, no seen calls
    got = benchtime.fresh_ms(inputs, lambda t: None, 0, 1.0, (seen_call, lambda k: None))
    assert got == (1.1, None) and made == ["fresh"]
    assert not benchtime.suspect(1.0, *got)


def test_a_warm_up_under_a_shared_hold_makes_way_between_its_calls(tmp_path, monkeypatch):
    """A baseline's warm-up holds the GPU lock shared: a timing that asks for it gets it at the
    next call, after the GPU work so far is finished (the ``sync``)."""
    import threading

    from kbx.gpu import gpulock

    monkeypatch.setattr(gpulock, "YIELD_AFTER_S", 0.0)
    monkeypatch.setattr(gpulock, "CHECK_EVERY_S", 0.0)
    lock = str(tmp_path / "gpu0.lock")
    order = []
    asked, blocked = threading.Event(), threading.Event()
    monkeypatch.setattr(gpulock, "ON_WAIT", [lambda waiting: waiting and blocked.set()])

    def timing():
        asked.wait(5)
        with gpulock.exclusive(lock, "timing"):
            order.append("timing")

    def call():
        order.append("call")
        if order.count("call") == 2:  # the timing asks during the second call
            asked.set()
            blocked.wait(5)  # ... and waits for the shared hold

    t = threading.Thread(target=timing)
    t.start()
    with gpulock.shared(lock, "eager warm-up"):
        warm_up([call, call, call], min_ms=0.0, sync=lambda: order.append("sync"))
    t.join(5)
    # the third call's safe point: the first two calls' work finished, the timing, the call
    assert order == ["call", "sync", "call", "sync", "sync", "timing", "call", "sync"]


FIRST_SESSION = """
import json, sys
import torch
from kbx.gpu import benchtime
if sys.argv[1] == "prepared":
    benchtime.prepare_profiler()
before = set(sys.modules)
from torch.profiler import ProfilerActivity, profile
with profile(activities=[ProfilerActivity.CPU]):
    torch.ones(4).add(1)
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_a_prepared_profiler_imports_nothing_when_a_case_is_profiled():
    """A profiler session's start imports torch._inductor (and torch._dynamo) the first time;
    in a child that was inside its exclusive timing turn, seconds in which the GPU stood idle.
    ``prepare_profiler`` (the child's setup) takes that import first.  Fresh interpreters:
    this one's tests have imported those modules already."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    new = {}
    for how in ("prepared", "bare"):
        out = subprocess.run(
            [sys.executable, "-c", FIRST_SESSION, how],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        new[how] = json.loads(out.stdout.strip().splitlines()[-1])
    assert "torch._inductor" in new["bare"]  # what the preparation takes out of the turn
    assert new["prepared"] == []


def test_each_timed_output_is_taken_as_it_is_when_its_call_returns(monkeypatch):
    """Work left for later (a thread that fills the output after kbx's clock stopped) is
    missing from the timed output the parent checks: the final call's output is copied once the
    work queued by its return is done, not whenever kbx gets to it."""
    import dataclasses
    import threading
    import time

    import pytest
    import torch

    from kbx.evaluate import check as reference
    from kbx.sandbox.child import runner
    from kbx.suite import find
    from kbx.suite.task import Case
    from kbx.suite.verdict import Reject, Verdict

    stand_in_clock(monkeypatch, passes=3)
    task = dataclasses.replace(find("Math/rsqrt"), bench=(Case((1000,), seed=11),))
    plan = runner.Plan.build(task, Placement(timed=True), bench=True)

    class Quiet:
        def send(self, event, **fields):
            pass

    def later(x, out=None):
        y = torch.full_like(x, float("nan"))
        threading.Timer(0.05, lambda: y.copy_(torch.rsqrt(x))).start()
        return y

    copy_out = runner.copy_out

    def in_a_while(*args, **kwargs):  # as after other cases' timings
        time.sleep(0.3)  # every thread has filled its output by now
        return copy_out(*args, **kwargs)

    monkeypatch.setattr(runner, "copy_out", in_a_while)
    _, timed, variants = runner.time_bench(task, plan, later, Quiet())
    with pytest.raises(Reject) as caught:
        reference.judge(task, keyed({"timed": timed}), variants=dict(enumerate(variants)))
    assert caught.value.verdict == Verdict.MISMATCH


def test_the_timing_loop_was_bound_before_the_candidate_and_sends_its_raw_samples(monkeypatch):
    """Replacing ``runner.time_case`` (a module global the candidate's process can rebind)
    changes nothing; every timed call's time goes to the parent, which computes the statistics
    (``follow.from_samples``): a median the child reports is not taken."""
    import dataclasses

    from kbx.core.config import Limits
    from kbx.gpu import clock as timing
    from kbx.sandbox import follow
    from kbx.sandbox.child import runner
    from kbx.sandbox.expect import Expected
    from kbx.sandbox.wire.channel import encode, parse_line
    from kbx.suite import find
    from kbx.suite.task import Case

    def cpu_time_calls(calls, prepare=None, budget_ms=0.0, warm_hold=None, turn=None, rel_ci=0.01):
        for i in range(4):
            prepare(i % len(calls))
            calls[i % len(calls)]()
        return timing.Timing(0.001, 0.001, 0.001, 0.001, 4, (2.0, 1.0, 3.0, 4.0))

    stand_in_clock(monkeypatch, passes=4)
    monkeypatch.setattr(timing, "time_calls", cpu_time_calls)
    monkeypatch.setattr(runner, "time_case", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    task = dataclasses.replace(find("Math/rsqrt"), bench=(Case((1000,), seed=11),))
    plan = runner.Plan.build(task, Placement(timed=True), bench=True)
    sent = []

    class Channel:
        def send(self, event, **fields):
            sent.append((event, fields))

    timings, _, _ = runner.time_bench(task, plan, lambda x, out=None: x.rsqrt(), Channel())
    assert ("samples", {"index": 0, "ms": [2.0, 1.0, 3.0, 4.0]}) in sent
    assert timings[0]["median_ms"] == 0.001  # what the child says
    follower = follow.Follower(
        os.getpid(), Expected({}, (0,), 1), Limits(), "cuda", perf=True, triton=False
    )
    said = [("ready", {"parts": {}}), ("imported", {}), ("case", {"kind": "bench", "index": 0})]
    said += [("timing", {"index": 0}), *[m for m in sent if m[0] == "samples"]]
    for event, fields in said:
        assert not follower.take(parse_line(encode(event, **fields).rstrip(b"\n")))
    assert follower.take(parse_line(encode("done", timings=timings).rstrip(b"\n")))
    trusted = follower.got.timings
    assert trusted[0]["median_ms"] == 2.5 and trusted[0]["min_ms"] == 1.0
    assert trusted[0]["reps"] == 4 and trusted[0]["fresh_ms"] == timings[0]["fresh_ms"]


def test_the_l2_is_made_cold_for_persisting_lines_through_the_driver():
    """Before every timed call: the persisting carve-out set to zero and every persisting line
    reset (a candidate's access-policy window keeps nothing across kbx's flush); without the
    CUDA driver, nothing to do."""
    from kbx.gpu import clock as timing

    calls = []

    class Driver:
        class cuCtxSetLimit:  # noqa: N801 - the driver's names
            def __call__(self, limit, value):
                calls.append(("limit", limit, value))
                return 0

        class cuCtxResetPersistingL2Cache:  # noqa: N801
            def __call__(self):
                calls.append(("reset",))
                return 0

    driver = Driver()
    driver.cuCtxSetLimit = Driver.cuCtxSetLimit()
    driver.cuCtxResetPersistingL2Cache = Driver.cuCtxResetPersistingL2Cache()
    timing.cold_l2(driver)()
    assert calls == [("limit", timing.CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0), ("reset",)]

    class Old:
        pass

    assert timing.cold_l2(Old())() is None  # a driver without them: nothing to do
