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
