"""cores: a core per GPU kept for its timing turns, the exclusive holder moved onto it."""

from __future__ import annotations

import os

import pytest

from kbx.gpu import cores, gpulock
from kbx.gpu.placement import Placement


@pytest.fixture
def host(monkeypatch):
    """A host of ``n`` cores whose affinity calls are recorded instead of made."""
    calls: list[tuple[int, set[int]]] = []

    def make(n: int) -> list[tuple[int, set[int]]]:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(n)))
        monkeypatch.setattr(os, "sched_setaffinity", lambda pid, mask: calls.append((pid, mask)))
        return calls

    return make


def test_each_gpu_gets_a_core_and_the_process_keeps_to_the_others_until_released(host):
    calls = host(16)
    cpus = cores.Reservation()
    assert cpus.reserve([0, 1]) == {0: 15, 1: 14}
    assert calls and all(mask == set(range(14)) for _, mask in calls)
    assert {pid for pid, _ in calls} >= {int(t) for t in os.listdir("/proc/self/task")}
    calls.clear()
    assert cpus.reserve([0, 1]) == {0: 15, 1: 14}  # asked again: the same cores
    assert cpus.for_gpu(1) == 14 and cpus.for_gpu(None) is None
    calls.clear()
    cpus.release()
    assert calls and all(mask == set(range(16)) for _, mask in calls)  # every core back
    assert cpus.for_gpu(0) is None


def test_a_worker_process_adopts_the_parents_cores_without_moving_itself(host):
    calls = host(16)
    cpus = cores.Reservation()
    cpus.adopt({0: 15, 1: None})  # GPU 1 got no core in the parent
    assert cpus.for_gpu(0) == 15 and cpus.for_gpu(1) is None
    cpus.release()
    assert calls == []


def test_no_reservation_without_enough_cores_for_the_rest(host):
    calls = host(cores.MIN_OTHER_CORES + 1)
    cpus = cores.Reservation()
    assert cpus.reserve([0, 1]) == {}
    assert calls == [] and cpus.for_gpu(0) is None


def test_the_exclusive_holder_times_on_its_gpus_core_and_then_moves_back(tmp_path):
    """Real affinity calls, on this thread: only exclusive holds with a core move it."""
    before = os.sched_getaffinity(0)
    core = max(before)
    lock = str(tmp_path / "gpu0.lock")
    with gpulock.shared(lock, "check"):
        assert os.sched_getaffinity(0) == before
    with gpulock.exclusive(lock, "timing", core):
        assert os.sched_getaffinity(0) == {core}
        with gpulock.exclusive(lock, "nested", core):
            assert os.sched_getaffinity(0) == {core}
        assert os.sched_getaffinity(0) == {core}
    assert os.sched_getaffinity(0) == before
    with gpulock.exclusive(str(tmp_path / "gpu1.lock"), "timing"):  # no core given
        assert os.sched_getaffinity(0) == before


def test_the_child_and_the_baseline_worker_are_told_their_gpus_core(monkeypatch):
    from kbx.core.config import EvalConfig
    from kbx.evaluate import baselines
    from kbx.gpu import compile_pool
    from kbx.sandbox.childenv import settings
    from kbx.suite import find

    assert settings(EvalConfig(device="cuda", gpu=1, timing_core=14)).timing_core == 14
    assert settings(EvalConfig(device="cuda", gpu=0)).timing_core is None
    assert settings(EvalConfig(device="cpu", gpu=1, timing_core=14)).timing_core is None
    asked = []

    def ask(key, env, request, timeout_s, grant=None):
        asked.append(request)
        return {"ok": {"0:eager": 1.0}}

    monkeypatch.setattr(compile_pool.POOL, "ask", ask)
    task = find("Math/add")
    got = baselines.in_worker(task, [(0, "eager")], Placement("cuda", 1, "/x/gpu1.lock", 14, True))
    assert got == ({(0, "eager"): 1.0}, 0.0)
    assert asked[0]["core"] == "14" and asked[0]["lock"] == "/x/gpu1.lock"


def test_a_scheduler_gives_each_job_its_gpus_core(host):
    from kbx.core.config import EvalConfig
    from kbx.run.scheduler import Scheduler

    host(16)
    sched = Scheduler(EvalConfig(device="cuda"), 2, [0, 1])
    sched.cores.reserve([0, 1])
    assert sched.job(1).timing_core == 14 and sched.job(1).gpu == 1
    assert sched.job(None).timing_core is None
