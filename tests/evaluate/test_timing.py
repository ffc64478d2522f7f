"""Baselines: measured once, cached across runs (failed torch.compile as None), owned by one
``Baselines`` object; the timing stage: malformed reports, reused results, the roofline."""

import threading

import pytest
import torch

from kbx.core.result import CaseTiming, sol_score
from kbx.evaluate import baselines as bl
from kbx.evaluate import timing
from kbx.evaluate.baselines import BaselineCache, Baselines
from kbx.gpu.hardware import Peaks
from kbx.gpu.placement import CPU, Placement
from kbx.suite import find
from kbx.suite.verdict import Reject, Verdict


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
    """The floor is the declared bytes at the data sheet's bandwidth (an H200's 4.8 TB/s, not
    the 4.0 TB/s its copy measured); the achieved figures are against the declared bytes."""
    gelu = find("Activation/gelu")
    peaks = Peaks(bandwidth_gbs=4000.0, tflops={"fp32": 50.0, "fp16": 800.0}, gpu="NVIDIA H200")
    moved = gelu.bytes_moved(gelu.bench[0])
    floor = moved / 4800e9 * 1e3
    with pytest.raises(Reject) as err:
        timing.roofline(gelu, 0, floor / 2, peaks)
    assert err.value.verdict == Verdict.TOO_FAST
    assert "at 4800 GB/s" in err.value.detail and "(data sheet: H200 SXM)" in err.value.detail
    row = timing.roofline(gelu, 0, floor * 2, peaks)
    assert row["floor_ms"] == pytest.approx(floor)
    assert row["achieved_gbs"] == pytest.approx(2400.0)


@pytest.mark.parametrize("gpu", ["NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA L4"])
def test_a_case_at_the_data_sheet_floor_is_not_too_fast_and_one_3x_under_it_is(gpu):
    """index_fill_'s reference was too_fast on an H100 whose copy measured below its sheet: the
    floor now takes the sheet's bandwidth, above any copy; a time at that floor passes, a third
    of it does not.  The measured copy still gives the efficiency figures."""
    task = find("Index/index_fill_")
    peaks = Peaks(bandwidth_gbs=200.0, tflops={"fp32": 10.0, "fp16": 100.0}, gpu=gpu)
    sheet_gbs = {"NVIDIA H100 80GB HBM3": 3350, "NVIDIA H100 PCIe": 2000, "NVIDIA L4": 300}[gpu]
    for index, case in enumerate(task.bench):
        floor = task.bytes_moved(case) / (sheet_gbs * 1e9) * 1e3
        row = timing.roofline(task, index, floor, peaks)
        assert row["floor_ms"] == pytest.approx(floor)
        assert row["bandwidth_share"] == pytest.approx(sheet_gbs / 200.0)  # of the measured
        with pytest.raises(Reject) as err:
            timing.roofline(task, index, floor / 3, peaks)
        assert err.value.verdict == Verdict.TOO_FAST


def fake_worker(calls: list, cpu_s: float = 0.0):
    """An ``in_worker`` that measures eager as 1 + case and fails every torch.compile."""

    def in_worker(task, wanted, place, grant=None, figures=None):
        calls.extend(wanted)
        if figures is not None:
            figures.update(peak_bytes=3 << 20, kept_bytes=0)
        return {(i, k): (1.0 + i if k == "eager" else None) for i, k in wanted}, cpu_s

    return in_worker


def test_baselines_are_measured_once_then_come_from_the_cache(tmp_path, monkeypatch):
    """Every baseline is measured by a baseline process, eager too; a later run (a new
    ``Baselines``, same cache file) measures nothing."""
    task = find("Math/rsqrt")
    calls: list = []
    monkeypatch.setattr(bl, "baseline_key", lambda t, i, k: f"{t.id}|{i}|{k}")
    monkeypatch.setattr(bl, "in_worker", fake_worker(calls, cpu_s=2.5))
    first = Baselines(tmp_path / "b.sqlite")
    n = len(task.bench)
    got = first.ms(task, bl.KINDS, CPU)
    assert sorted(calls) == sorted((i, k) for i in range(n) for k in bl.KINDS)
    assert got[(0, "eager")] == 1.0 and got[(0, "compile")] is None
    assert first.worker_cpu_s == 2.5  # what its workers reported
    assert first.gpu_bytes[task.id] == {"peak_bytes": 3 << 20, "kept_bytes": 0}
    calls.clear()
    assert first.ms(task, ("eager",), CPU) == {(i, "eager"): 1.0 + i for i in range(n)}
    assert calls == []  # from memory
    again = Baselines(tmp_path / "b.sqlite").ms(task, bl.KINDS, CPU)
    assert calls == [] and again == got  # from the cache
    Baselines(None).ms(task, ("eager",), CPU)
    assert len(calls) == n  # no cache file: measured again


def test_baselines_already_known_take_no_room_on_the_gpu(tmp_path, monkeypatch):
    """Found in memory or the cache, a task's baselines come back although its GPU's budget
    has no room (a job in the baselines stage's tail); only a measurement waits for room."""
    task = find("Math/rsqrt")
    monkeypatch.setattr(bl, "baseline_key", lambda t, i, k: f"{t.id}|{i}|{k}")
    monkeypatch.setattr(bl, "in_worker", fake_worker([]))
    first = Baselines(tmp_path / "b.sqlite")
    first.ms(task, bl.KINDS, CPU)

    def full(task_, place, wait=True):
        raise bl.NoRoom("no room on the GPU")

    monkeypatch.setattr(bl, "room_for", full)
    assert first.ms(task, bl.KINDS, CPU, wait=False)[(0, "eager")] == 1.0  # from memory
    assert Baselines(tmp_path / "b.sqlite").ms(task, ("eager",), CPU, wait=False)  # the cache
    with pytest.raises(bl.NoRoom):
        Baselines(None).ms(task, ("eager",), CPU, wait=False)  # to measure: waits for room


def test_a_measurement_under_way_is_waited_for_without_room(monkeypatch):
    """A second call for a task being measured (a job behind the baselines stage) waits for
    that measurement and takes its numbers, asking no room of a GPU that has none."""
    task = find("Math/rsqrt")
    inside, release = threading.Event(), threading.Event()
    monkeypatch.setattr(bl, "baseline_key", lambda t, i, k: f"{t.id}|{i}|{k}")
    measure = fake_worker([])

    def slow(*args, **kwargs):
        inside.set()
        assert release.wait(10)
        return measure(*args, **kwargs)

    monkeypatch.setattr(bl, "in_worker", slow)
    store = Baselines(None)
    first = threading.Thread(target=store.ms, args=(task, ("eager",), CPU))
    first.start()
    assert inside.wait(10)

    def full(task_, place, wait=True):
        raise bl.NoRoom("no room on the GPU")

    monkeypatch.setattr(bl, "room_for", full)
    threading.Timer(0.2, release.set).start()
    assert store.ms(task, ("eager",), CPU, wait=False)[(0, "eager")] == 1.0
    first.join(10)


def test_the_cache_keys_are_those_earlier_runs_wrote(monkeypatch):
    """Baselines cached by earlier runs are found: the key's form does not change."""
    machine = {"gpu": "H200", "driver": "570", "torch": "2.9", "triton": "3.5", "python": "3.11"}
    monkeypatch.setattr(bl, "fingerprint", lambda device: machine)
    task = find("Math/rsqrt")
    assert bl.baseline_key(task, 1, "compile") == (
        '{"case": 1, "driver": "570", "gpu": "H200", "kind": "compile", "task": "Math/rsqrt", '
        f'"torch": "2.9", "triton": "3.5", "version": {task.version}}}'
    )


class Fixed:
    """A stand-in ``Baselines``: every eager baseline takes ``ms``."""

    def __init__(self, ms: float) -> None:
        self.value = ms

    def ms(self, task, kinds, place):
        return {(i, "eager"): self.value for i in range(len(task.bench))}

    def interval(self, task, index, kind="eager"):
        return None


class WithInterval(Fixed):
    """Baselines whose eager medians carry a +-10% interval."""

    def interval(self, task, index, kind="eager"):
        return [0.9 * self.value, 1.1 * self.value]


def test_a_baseline_s_interval_is_kept_beside_its_median(tmp_path, monkeypatch):
    """The worker's interval ends are cached under keys of their own, so a later run finds
    them; a baseline cached without them has no interval (and is not measured again)."""
    task = find("Math/rsqrt")
    monkeypatch.setattr(bl, "baseline_key", lambda t, i, k: f"{t.id}|{i}|{k}")

    def in_worker(task_, wanted, place, grant=None, figures=None):
        got = {(i, k): 2.0 for i, k in wanted}
        got.update(
            {(i, f"{k}_lo"): 1.8 for i, k in wanted} | {(i, f"{k}_hi"): 2.2 for i, k in wanted}
        )
        return got, 0.0

    monkeypatch.setattr(bl, "in_worker", in_worker)
    with Baselines(tmp_path / "b.sqlite") as first:
        assert first.ms(task, ("eager",), CPU) == {
            (i, "eager"): 2.0 for i in range(len(task.bench))
        }
        assert first.interval(task, 0) == [1.8, 2.2]
    monkeypatch.setattr(bl, "in_worker", fake_worker([]))
    with Baselines(tmp_path / "b.sqlite") as again:
        assert again.interval(task, 1) == [1.8, 2.2]  # from the cache file
        assert again.interval(task, 0, "compile") is None


def test_a_malformed_timing_report_is_forbidden_not_a_harness_error():
    """Timings come from the candidate's process: garbage there is the candidate's doing."""
    task = find("Math/rsqrt")
    good = [
        {"median_ms": 0.5, "reps": 10, "phases_ms": {"timing": 3.0}, "fresh_ms": 0.5}
        for _ in task.bench
    ]
    cases, speedup, vs_compile = timing.speedups(task, good, Fixed(1.0), CPU, ("eager",))
    assert speedup == pytest.approx(2.0) and cases[0].phases_ms == {"timing": 3.0}
    assert vs_compile is None
    bad = [dict(t) for t in good]
    bad[0]["median_ms"] = "fast"
    with pytest.raises(Reject) as err:
        timing.speedups(task, bad, Fixed(1.0), CPU, ("eager",))
    assert err.value.verdict == Verdict.FORBIDDEN

    unprobed = [dict(t) for t in good]
    del unprobed[1]["fresh_ms"]
    with pytest.raises(Reject) as err:
        timing.speedups(task, unprobed, Fixed(1.0), CPU, ("eager",))
    assert err.value.verdict == Verdict.FORBIDDEN
    with pytest.raises(Reject) as err:
        timing.speedups(task, good[:-1], Fixed(1.0), CPU, ("eager",))
    assert err.value.verdict == Verdict.CRASHED


def test_speedups_are_geometric_means_over_the_cases(tmp_path, monkeypatch):
    """vs eager over every case; vs torch.compile only when it compiled every case."""
    task = find("Math/rsqrt")
    n = len(task.bench)
    assert n >= 2
    monkeypatch.setattr(bl, "baseline_key", lambda t, i, k: f"{t.id}|{i}|{k}")

    def in_worker(task_, wanted, place, grant=None, figures=None):
        return {(i, k): (4.0 if k == "eager" else 2.0) * (i + 1) for i, k in wanted}, 0.0

    monkeypatch.setattr(bl, "in_worker", in_worker)
    reports = [{"median_ms": float(i + 1), "reps": 10, "fresh_ms": float(i + 1)} for i in range(n)]
    cases, vs_eager, vs_compile = timing.speedups(task, reports, Baselines(None), CPU)
    assert [c.eager_ms for c in cases] == [4.0 * (i + 1) for i in range(n)]
    assert vs_eager == pytest.approx(4.0) and vs_compile == pytest.approx(2.0)
    monkeypatch.setattr(bl, "in_worker", fake_worker([]))  # torch.compile fails: no speedup
    assert timing.speedups(task, reports, Baselines(None), CPU)[2] is None


def test_each_speedup_carries_the_interval_of_its_kernel_time():
    """The child's 95% interval of each median gives each case's speedup an interval, and the
    geometric mean one from the cases' ends; a report without one gives none."""
    task = find("Math/rsqrt")
    reports = [
        {"median_ms": 0.5, "ci_low_ms": 0.4, "ci_high_ms": 0.625, "reps": 10, "fresh_ms": 0.5}
        for _ in task.bench
    ]
    cases, speedup, _ = timing.speedups(task, reports, Fixed(1.0), CPU, ("eager",))
    assert cases[0].kernel_ci_ms == [0.4, 0.625]
    assert cases[0].speedup_ci == pytest.approx((1.6, 2.5))
    assert timing.speedup_ci(cases) == pytest.approx([1.6, 2.5])
    assert cases[0].speedup_ci[0] < speedup < cases[0].speedup_ci[1]
    widened = timing.speedups(task, reports, WithInterval(1.0), CPU, ("eager",))[0]
    assert widened[0].eager_ci_ms == [0.9, 1.1]
    assert widened[0].speedup_ci == pytest.approx((0.9 / 0.625, 1.1 / 0.4))
    for r in reports:
        del r["ci_low_ms"], r["ci_high_ms"]
    cases, _, _ = timing.speedups(task, reports, Fixed(1.0), CPU, ("eager",))
    assert cases[0].speedup_ci is None and timing.speedup_ci(cases) is None


def test_timed_calls_far_faster_than_calls_on_new_contents_are_too_fast():
    """The reuse probe: an honest kernel takes about as long on new contents as on contents it
    has seen; a result cache keyed on contents does not.  Tiny calls are left to clock noise."""
    task = find("MatrixMultiply/matmul")

    def timings(median: float, fresh: float, seen: float | None = None) -> list[dict]:
        report = {"median_ms": median, "reps": 10, "fresh_ms": fresh, "seen_ms": seen}
        return [dict(report) for _ in task.bench]

    def speedups(reports: list[dict]) -> list:
        return timing.speedups(task, reports, Fixed(3.0), CPU, ("eager",))[0]

    cases = speedups(timings(1.0, 1.08, 1.0))
    assert cases[0].fresh_ms == 1.08 and cases[0].seen_ms == 1.0
    speedups(timings(0.004, 0.012))  # noise-sized calls
    # a stall during the probe slowed the seen calls beside the fresh ones: not reuse
    speedups(timings(0.24, 2.9, 2.8))
    for seen in (None, 0.25):  # no seen calls reported, or fast ones: reuse
        with pytest.raises(Reject) as err:
            speedups(timings(0.24, 2.9, seen))
        assert err.value.verdict == Verdict.TOO_FAST and "reused" in err.value.detail


def test_baselines_are_fetched_in_the_background_and_failures_left_for_later(monkeypatch):
    """The prefetch threads start at the first prefetch, not at import, and end with close."""
    from contextlib import nullcontext

    task = find("Math/rsqrt")
    calls = []

    def fake(self, task_, kinds, place, wait=True):
        calls.append((task_.id, kinds, place.lock, place.gpu, threading.current_thread().name))
        raise RuntimeError("eager failed")  # raised again by speedups' own call, not here

    monkeypatch.setattr(Baselines, "ms", fake)
    monkeypatch.setattr(bl, "on_device", lambda gpu: nullcontext())  # no GPU here
    base = Baselines(None)
    assert base.pool is None
    base.prefetch(task, ("eager",), Placement(lock="/tmp/gpu0.lock")).result(timeout=10)
    assert calls[0][:4] == ("Math/rsqrt", ("eager",), "/tmp/gpu0.lock", None)
    assert calls[0][4].startswith("kbx-baselines")
    pool = base.pool
    base.close()
    assert base.pool is None and pool is not None
    with pytest.raises(RuntimeError):  # shut down
        pool.submit(print)


def test_the_timing_stage_prefetches_only_timed_runs_and_shares_one_object(tmp_path):
    from kbx.core.config import EvalConfig

    path = tmp_path / "b.sqlite"
    assert bl.open_baselines(path) is bl.open_baselines(path)
    assert timing.prefetch(find("Math/rsqrt"), EvalConfig(device="cpu"), CPU) is None


def test_the_peaks_are_measured_once(monkeypatch, tmp_path):
    measured = []
    peaks = Peaks(bandwidth_gbs=4000.0, tflops={"fp32": 50.0})
    monkeypatch.setattr(bl, "load_peaks", lambda folder: measured.append(folder) or peaks)
    base = Baselines(tmp_path / "b.sqlite")
    assert base.peaks(CPU) is peaks and base.peaks(CPU) is peaks
    assert measured == [tmp_path]  # kept next to the cache


def test_durations_without_a_cache_are_none():
    base = Baselines(None)
    base.put_duration("Math/add", 3.0)
    assert base.durations() == {}


def test_the_stage_fills_the_result_with_cases_speedups_and_lock_wait(monkeypatch, tmp_path):
    from kbx.core.candidate import Candidate
    from kbx.core.config import EvalConfig
    from kbx.core.result import Result

    task = find("Math/rsqrt")
    monkeypatch.setattr(
        Baselines,
        "ms",
        lambda self, t, kinds, lock, gpu=None, core=None: {
            (i, k): 2.0 for i in range(len(t.bench)) for k in kinds
        },
    )
    monkeypatch.setattr(Baselines, "peaks", lambda self, lock, core=None: Peaks(1e9, {"fp32": 1e9}))
    monkeypatch.setattr(Baselines, "interval", lambda self, t, i, kind="eager": [1.5, 2.5])
    cfg = EvalConfig(device="cuda", baseline_cache=tmp_path / "b.sqlite")
    result = Result.of(Candidate("s", task.id, "x"), "cuda", Verdict.PASSED, "all match", "done")
    reports = [{"median_ms": 1.0, "reps": 10, "fresh_ms": 1.0} for _ in task.bench]
    timing.against_baselines(task, reports, CPU, cfg, result)
    assert (result.speedup, result.speedup_compile) == (2.0, 2.0)
    assert result.detail == "all match; 2x vs eager" and result.stage_s["baselines_wait"] == 0.0
    assert len(result.cases) == len(task.bench) and result.cases[0].floor_ms is not None
    assert result.cases[0].eager_ci_ms == [1.5, 2.5]
    assert result.speedup_ci is None  # these reports give the kernel's median no interval


def test_efficiency_is_measured_against_the_peak_of_the_case_s_dtype():
    """float32 against the better of the measured fp32 and tf32 (not the best physical peak of
    any precision, as the too_fast floor is: an H100's int8), bf16 against its own; the SOL
    score is 1 at the roofline and 0.5 at eager's time."""
    peaks = Peaks(1000.0, {"fp32": 50.0, "tf32": 400.0, "fp16": 800.0, "bf16": 900.0})
    got = peaks.efficiency(1e9, 1e12, torch.float32, kernel_ms=10.0)
    assert got["bandwidth_share"] == pytest.approx(0.1)
    assert got["compute_share"] == pytest.approx(0.25) and got["dtype_floor_ms"] == 2.5
    h100 = Peaks(1000.0, peaks.tflops, gpu="NVIDIA H100 80GB HBM3")
    assert h100.floor_ms(1e9, 1e12) == pytest.approx(1e12 / 1979e12 * 1e3)  # the sheet's int8
    assert peaks.efficiency(0, 9e11, torch.bfloat16, 1.0)["compute_share"] == pytest.approx(1.0)
    assert sol_score(2.5, 20.0, 2.5) == 1.0 and sol_score(20.0, 20.0, 2.5) == 0.5
    assert sol_score(10.0, 20.0, 2.5) == pytest.approx(1 / (1 + 7.5 / 17.5))
    assert sol_score(10.0, 2.0, 2.5) is None  # eager already at the floor: no scale
    case = CaseTiming(0, "x", 10.0, 20.0, 10, dtype_floor_ms=2.5)
    assert case.sol_score == pytest.approx(0.7)
    assert CaseTiming(0, "x", 10.0, 20.0, 10).sol_score is None
