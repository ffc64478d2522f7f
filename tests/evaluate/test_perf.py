"""Baseline cache: persisted across runs, failed torch.compile remembered as None."""

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
