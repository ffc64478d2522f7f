"""cores: a core per GPU kept for its timing turns, the exclusive holder moved onto it."""

from __future__ import annotations

import os

import pytest

from kbx.runtime import cores, gpulock


@pytest.fixture
def fresh(monkeypatch):
    """Module state of a new parent, and a host of ``n`` cores whose affinity calls are recorded
    instead of made."""
    monkeypatch.setattr(cores, "_by_gpu", {})
    monkeypatch.setattr(cores, "_first_mask", set())
    monkeypatch.setattr(cores, "RESERVED", {})
    calls: list[tuple[int, set[int]]] = []

    def host(n: int) -> list[tuple[int, set[int]]]:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(n)))
        monkeypatch.setattr(os, "sched_setaffinity", lambda pid, mask: calls.append((pid, mask)))
        return calls

    return host


def test_each_gpu_gets_a_core_and_the_parent_keeps_to_the_others(fresh):
    calls = fresh(16)
    assert cores.reserve([0, 1]) == {0: 15, 1: 14}
    assert calls and all(mask == set(range(14)) for _, mask in calls)
    assert {pid for pid, _ in calls} >= {int(t) for t in os.listdir("/proc/self/task")}
    calls.clear()
    assert cores.reserve([0, 1]) == {0: 15, 1: 14}  # a later run of the same parent
    assert cores.for_gpu(1) == 14 and cores.for_gpu(None) is None


def test_a_worker_process_adopts_the_parents_cores_without_moving_itself(fresh):
    calls = fresh(16)
    cores.adopt({0: 15, 1: None})  # GPU 1 got no core in the parent
    assert cores.for_gpu(0) == 15 and cores.for_gpu(1) is None
    assert calls == []


def test_no_reservation_without_enough_cores_for_the_rest(fresh):
    calls = fresh(cores.MIN_OTHER_CORES + 1)
    assert cores.reserve([0, 1]) == {}
    assert calls == [] and cores.for_gpu(0) is None


def test_the_exclusive_holder_times_on_its_gpus_core_and_then_moves_back(tmp_path, monkeypatch):
    """Real affinity calls, on this thread: only exclusive holds move it."""
    monkeypatch.setattr(cores, "RESERVED", {})
    before = os.sched_getaffinity(0)
    core = max(before)
    lock = str(tmp_path / "gpu0.lock")
    cores.register(lock, core)
    with gpulock.shared(lock, "check"):
        assert os.sched_getaffinity(0) == before
    with gpulock.exclusive(lock, "timing"):
        assert os.sched_getaffinity(0) == {core}
        with gpulock.exclusive(lock, "nested"):
            assert os.sched_getaffinity(0) == {core}
        assert os.sched_getaffinity(0) == {core}
    assert os.sched_getaffinity(0) == before
    with gpulock.exclusive(str(tmp_path / "gpu1.lock"), "timing"):  # no core registered
        assert os.sched_getaffinity(0) == before


def test_the_child_and_the_baseline_worker_are_told_their_gpus_core(monkeypatch):
    from kbx.config import EvalConfig
    from kbx.evaluate import baselines
    from kbx.evaluate.childenv import settings
    from kbx.runtime import compile_pool
    from kbx.suite import find

    monkeypatch.setattr(cores, "_by_gpu", {1: 14})
    assert settings(EvalConfig(device="cuda", gpu=1)).timing_core == 14
    assert settings(EvalConfig(device="cuda", gpu=0)).timing_core is None
    assert settings(EvalConfig(device="cpu", gpu=1)).timing_core is None
    asked = []

    def ask(key, env, request, timeout_s):
        asked.append(request)
        return {"ok": {"0:eager": 1.0}}

    monkeypatch.setattr(compile_pool.POOL, "ask", ask)
    assert baselines.in_worker(find("Math/add"), [(0, "eager")], "/x/gpu1.lock", 1) == (
        {(0, "eager"): 1.0},
        0.0,
    )
    assert asked[0]["core"] == "14" and asked[0]["lock"] == "/x/gpu1.lock"
