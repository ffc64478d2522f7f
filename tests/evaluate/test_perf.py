"""Baselines: measured once, cached across runs (failed torch.compile as None); roofline."""

from kbx.evaluate.perf import BaselineCache


def test_baselines_persist_across_connections(tmp_path):
    path = tmp_path / "b.sqlite"
    cache = BaselineCache(path)
    assert cache.get("k") == (False, None)
    cache.put("k", 1.25)
    cache.put("failed-compile", None)
    again = BaselineCache(path)
    assert again.get("k") == (True, 1.25)
    assert again.get("failed-compile") == (True, None)


def test_roofline_rejects_impossible_times_and_reports_throughput():
    import pytest

    from kbx.evaluate.perf import roofline
    from kbx.hardware import Peaks
    from kbx.suite import find
    from kbx.verdict import Reject, Verdict

    gelu = find("Activation/gelu")
    peaks = Peaks(bandwidth_gbs=4000.0, tflops={"fp32": 50.0, "fp16": 800.0})
    moved = gelu.bytes_moved(gelu.bench[0])
    floor = moved / 4000e9 * 1e3
    with pytest.raises(Reject) as err:
        roofline(gelu, 0, floor / 2, peaks)
    assert err.value.verdict == Verdict.TOO_FAST
    row = roofline(gelu, 0, floor * 2, peaks)
    assert row["floor_ms"] == pytest.approx(floor)
    assert row["achieved_gbs"] == pytest.approx(2000.0)


def test_baselines_are_measured_once_then_come_from_the_cache(tmp_path, monkeypatch):
    """Every baseline is measured by a baseline process, eager too; a later run (empty memory,
    same cache file) measures nothing."""
    from kbx.evaluate import perf
    from kbx.suite import find

    task = find("Math/rsqrt")
    calls = []
    monkeypatch.setattr(perf, "baseline_key", lambda t, i, k: f"{t.id}|{i}|{k}")
    monkeypatch.setattr(
        perf,
        "in_worker",
        lambda t, wanted, lock, gpu: (
            calls.extend(wanted) or {(i, k): (1.0 + i if k == "eager" else None) for i, k in wanted}
        ),
    )
    monkeypatch.setattr(perf, "_memory", {})
    cache = perf.BaselineCache(tmp_path / "b.sqlite")
    n = len(task.bench)
    got = perf.baseline_ms(task, perf.KINDS, None, cache)
    assert sorted(calls) == sorted((i, k) for i in range(n) for k in perf.KINDS)
    assert got[(0, "eager")] == 1.0 and got[(0, "compile")] is None
    monkeypatch.setattr(perf, "_memory", {})
    calls.clear()
    again = perf.baseline_ms(task, perf.KINDS, None, perf.BaselineCache(tmp_path / "b.sqlite"))
    assert calls == [] and again == got


def test_a_malformed_timing_report_is_forbidden_not_a_harness_error(monkeypatch):
    """Timings come from the candidate's process: garbage there is the candidate's doing."""
    import pytest

    from kbx.evaluate import perf
    from kbx.suite import find
    from kbx.verdict import Reject, Verdict

    task = find("Math/rsqrt")
    monkeypatch.setattr(perf, "baseline_ms", lambda *a, **k: {(i, "eager"): 1.0 for i in range(9)})
    good = [
        {"median_ms": 0.5, "reps": 10, "phases_ms": {"timing": 3.0}, "fresh_ms": 0.5}
        for _ in task.bench
    ]
    cases, speedup, _ = perf.speedups(task, good, None, with_compile=False)
    assert speedup == pytest.approx(2.0) and cases[0].phases_ms == {"timing": 3.0}
    bad = [dict(t) for t in good]
    bad[0]["median_ms"] = "fast"
    with pytest.raises(Reject) as err:
        perf.speedups(task, bad, None, with_compile=False)
    assert err.value.verdict == Verdict.FORBIDDEN

    unprobed = [dict(t) for t in good]
    del unprobed[1]["fresh_ms"]
    with pytest.raises(Reject) as err:
        perf.speedups(task, unprobed, None, with_compile=False)
    assert err.value.verdict == Verdict.FORBIDDEN


def test_timed_calls_far_faster_than_calls_on_new_contents_are_too_fast(monkeypatch):
    """The reuse probe: an honest kernel takes about as long on new contents as on contents it
    has seen; a result cache keyed on contents does not.  Tiny calls are left to clock noise."""
    import pytest

    from kbx.evaluate import perf
    from kbx.suite import find
    from kbx.verdict import Reject, Verdict

    task = find("MatrixMultiply/matmul")
    monkeypatch.setattr(perf, "baseline_ms", lambda *a, **k: {(i, "eager"): 3.0 for i in range(9)})

    def timings(median: float, fresh: float, seen: float | None = None) -> list[dict]:
        report = {"median_ms": median, "reps": 10, "fresh_ms": fresh, "seen_ms": seen}
        return [dict(report) for _ in task.bench]

    cases, _, _ = perf.speedups(task, timings(1.0, 1.08, 1.0), None, with_compile=False)
    assert cases[0].fresh_ms == 1.08 and cases[0].seen_ms == 1.0
    perf.speedups(task, timings(0.004, 0.012), None, with_compile=False)  # noise-sized calls
    # a stall during the probe slowed the seen calls beside the fresh ones: not reuse
    perf.speedups(task, timings(0.24, 2.9, 2.8), None, with_compile=False)
    for seen in (None, 0.25):  # no seen calls reported, or fast ones: reuse
        with pytest.raises(Reject) as err:
            perf.speedups(task, timings(0.24, 2.9, seen), None, with_compile=False)
        assert err.value.verdict == Verdict.TOO_FAST and "reused" in err.value.detail


def test_baselines_are_fetched_in_the_background_and_failures_left_for_later(monkeypatch):
    import threading

    from kbx.evaluate import perf
    from kbx.suite import find

    task = find("Math/rsqrt")
    calls = []

    def fake(task_, kinds, lock_path, cache, gpu):
        calls.append((task_.id, kinds, lock_path, gpu, threading.current_thread().name))
        raise RuntimeError("eager failed")  # raised again by speedups' own call, not here

    monkeypatch.setattr(perf, "baseline_ms", fake)
    perf.prefetch(task, ("eager",), "/tmp/gpu0.lock", None).result(timeout=10)
    assert calls[0][:4] == ("Math/rsqrt", ("eager",), "/tmp/gpu0.lock", None)
    assert calls[0][4].startswith("kbx-baselines")
