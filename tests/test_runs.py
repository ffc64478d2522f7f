"""The scheduler spreads jobs over GPUs; a child sees only its own GPU."""

import os
import threading
import time
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from kbx.candidate import Candidate
from kbx.evaluate.pipeline import EvalConfig
from kbx.evaluate.sandbox import SandboxConfig, child_env
from kbx.run import scheduler as runs


@pytest.fixture(autouse=True)
def keep_torch_threads():
    """A GPU run sets the parent's torch threads; other tests keep theirs."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_jobs_are_spread_over_the_gpus(monkeypatch):
    seen = []

    def fake_evaluate(candidate, cfg):
        seen.append(cfg.gpu)
        return candidate.task_id

    monkeypatch.setattr(runs, "evaluate", fake_evaluate)
    sched = runs.Scheduler(EvalConfig(device="cuda"), jobs=4, gpus=[0, 1], procs=1)
    cands = [Candidate(f"s{i}", "Activation/gelu", "x") for i in range(10)]
    results = list(sched.run(cands))
    assert len(results) == 10
    assert set(seen) == {0, 1}
    assert sorted(sched.slots.queue, key=str) == [0, 0, 1, 1]
    cores = len(os.sched_getaffinity(0))
    assert torch.get_num_threads() == max(1, cores // runs.CHECK_SHARE)  # the parent's checks'
    list(runs.Scheduler(EvalConfig(device="cuda", check_threads=3), jobs=4, gpus=[0]).run(cands))
    assert torch.get_num_threads() == 3


def test_the_parent_hands_its_cached_gpu_memory_back_once_the_last_result_is_out(monkeypatch):
    events = []

    def fake_evaluate(candidate, cfg):
        events.append("job")
        return candidate.task_id

    monkeypatch.setattr(runs, "evaluate", fake_evaluate)
    monkeypatch.setattr(runs, "release_gpu_memory", lambda: events.append("released"))
    sched = runs.Scheduler(EvalConfig(device="cpu"), jobs=2, procs=1)
    results = sched.run([Candidate(f"s{i}", "Activation/gelu", "x") for i in range(3)])
    for _ in results:
        assert "released" not in events  # not while results are still being read
    assert events == ["job"] * 3 + ["released"]


def test_a_run_on_several_gpus_has_a_worker_process_per_gpu_by_default():
    assert runs.Scheduler(EvalConfig(device="cuda"), jobs=4, gpus=[0, 1]).procs == 2
    assert runs.Scheduler(EvalConfig(device="cuda"), jobs=4, gpus=[0]).procs == 1
    assert runs.Scheduler(EvalConfig(device="cpu"), jobs=4).procs == 1
    assert runs.Scheduler(EvalConfig(device="cuda"), jobs=1, gpus=[0, 1]).procs == 1  # per job
    assert runs.Scheduler(EvalConfig(device="cuda"), jobs=4, gpus=[0], procs=3).procs == 3


def test_loading_makes_each_gpus_context_and_lets_the_threads_go_even_if_it_fails(monkeypatch):
    from kbx.evaluate import reference
    from kbx.runtime import gpuops

    made: list[int | None] = []
    monkeypatch.setattr(gpuops, "make_context", made.append)

    def fails() -> None:
        raise RuntimeError("no fake tensors")

    monkeypatch.setattr(reference, "preload", fails)
    sched = runs.Scheduler(EvalConfig(device="cuda"), 4, [0, 1], procs=1)
    gpuops.begin_loading()
    with pytest.raises(RuntimeError):
        sched.load()
    assert made == [0, 1]
    assert gpuops._loaded.is_set()


def test_processes_with_job_threads_hand_the_gil_over_often():
    """A job thread's short steps between system calls wait for the GIL; at CPython's 5 ms
    they held the first jobs of a two-H200 run back by seconds (``runs.SWITCH_S``)."""
    import sys

    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        runs.Scheduler(EvalConfig(device="cpu"), 4, procs=2).prepare()  # the parent of workers
        assert sys.getswitchinterval() == pytest.approx(0.005)
        runs.Scheduler(EvalConfig(device="cpu"), 4).prepare()  # its own job threads
        assert sys.getswitchinterval() == pytest.approx(runs.SWITCH_S)
    finally:
        sys.setswitchinterval(before)


def test_baselines_first_measures_each_task_once_before_any_candidate(monkeypatch):
    events = []

    def fake_baselines(task, kinds, lock, cache, gpu):
        events.append(("baselines", task.id, gpu, lock))
        if task.id == "Math/add":
            raise RuntimeError("eager failed")  # left to the task's job, which reports it

    monkeypatch.setattr(runs.perf, "baseline_ms", fake_baselines)
    monkeypatch.setattr(runs.perf, "on_device", lambda gpu: nullcontext())  # no GPU here
    monkeypatch.setattr(runs, "evaluate", lambda c, cfg: events.append(("job", c.task_id)))
    cfg = EvalConfig(device="cuda", run_dir=Path("/tmp/kbx-run"), baselines_first=True)
    tasks = ["Activation/gelu", "Math/add", "Activation/gelu", "Loss/kl_div", "Math/sub"]
    cands = [Candidate(f"s{i}", t, "x") for i, t in enumerate(tasks)]
    told = []
    sched = runs.Scheduler(cfg, jobs=2, gpus=[0, 1], procs=1)  # threads: the fakes apply
    list(sched.run(cands, lambda t, left: told.append(left)))
    measured = [e for e in events if e[0] == "baselines"]
    assert sorted(e[1] for e in measured) == sorted(set(tasks))  # once per task
    assert {e[2] for e in measured} == {0, 1}
    assert all(e[3] == f"/tmp/kbx-run/gpu{e[2]}.lock" for e in measured)  # that GPU's lock
    assert [e[0] for e in events] == ["baselines"] * 4 + ["job"] * 5
    assert told == [3, 2, 1, 0]
    events.clear()
    list(runs.Scheduler(replace(cfg, baselines_first=False), jobs=2).run(cands))
    assert [e[0] for e in events] == ["job"] * 5  # by default each job's own prefetch does it


def test_worker_processes_start_before_the_parents_set_up_and_stop_if_it_fails(monkeypatch):
    """With several worker processes, they start first, so that their imports and fork servers
    overlap the parent's set-up and baselines stage; a failure there stops them."""
    events = []

    class FakeWorkers:
        def __init__(self, sched):
            events.append("workers")

        def results(self, candidates):
            events.append("candidates")
            yield from ()

        def stop(self):
            events.append("stopped")

    monkeypatch.setattr(runs.procs, "Workers", FakeWorkers)
    monkeypatch.setattr(runs, "release_gpu_memory", lambda: events.append("released"))
    monkeypatch.setattr(runs.Scheduler, "prepare", lambda self: events.append("prepare"))
    monkeypatch.setattr(runs.Scheduler, "baselines", lambda self, ids, cb: events.append("base"))
    cfg = EvalConfig(device="cuda", run_dir=Path("/tmp/kbx-run"), baselines_first=True)
    sched = runs.Scheduler(cfg, jobs=4, gpus=[0, 1], procs=2)
    list(sched.run([Candidate("s", "Math/add", "x")]))
    assert events == ["workers", "prepare", "base", "candidates", "released"]

    def failing(self, ids, cb):
        raise RuntimeError("stage failed")

    events.clear()
    monkeypatch.setattr(runs.Scheduler, "baselines", failing)
    with pytest.raises(RuntimeError):
        list(sched.run([Candidate("s", "Math/add", "x")]))
    assert events == ["workers", "prepare", "stopped"]


def test_the_baselines_stage_measures_as_many_tasks_at_once_as_it_is_told(monkeypatch):
    busy, most = [0], [0]
    guard = threading.Lock()

    def fake_baselines(task, kinds, lock, cache, gpu):
        with guard:
            busy[0] += 1
            most[0] = max(most[0], busy[0])
        time.sleep(0.05)
        with guard:
            busy[0] -= 1

    monkeypatch.setattr(runs.perf, "baseline_ms", fake_baselines)
    monkeypatch.setattr(runs.perf, "on_device", lambda gpu: nullcontext())
    ids = ["Activation/gelu", "Math/add", "Loss/kl_div", "Math/sub", "Reduce/sum", "Math/abs"]
    cfg = EvalConfig(device="cuda", baselines_first=True, baseline_workers=2)
    runs.Scheduler(cfg, jobs=1, gpus=[0]).baselines(ids)
    assert most[0] == 2
    most[0] = 0
    runs.Scheduler(replace(cfg, baseline_workers=1), jobs=1, gpus=[0, 1]).baselines(ids)
    assert most[0] == 2  # one per GPU


def test_child_sees_only_its_gpu(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    env = child_env(tmp_path, SandboxConfig(device="cuda", perf=True, gpu=1))
    assert env["CUDA_VISIBLE_DEVICES"] == "6"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    env = child_env(tmp_path, SandboxConfig(device="cuda", perf=True, gpu=1))
    assert env["CUDA_VISIBLE_DEVICES"] == "1"


def test_child_environment_is_scrubbed(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    env = child_env(tmp_path, SandboxConfig(device="cpu", perf=False))
    assert "OPENAI_API_KEY" not in env
    assert env["HOME"] == str(tmp_path) and env["TMPDIR"] == str(tmp_path)


def test_tasks_that_took_longest_last_time_start_first(tmp_path: Path):
    from kbx.evaluate.perf import BaselineCache

    cache = BaselineCache(tmp_path / "baselines.sqlite")
    cands = [Candidate(f"s/{t}", t, "x") for t in ("Math/add", "Loss/new", "LinearAlgebra/det")]
    assert runs.longest_first(cands, cache) == cands  # nothing known: source order
    cache.put_duration("Math/add", 2.0)
    cache.put_duration("LinearAlgebra/det", 30.0)
    cache.put_duration("Math/add", 1.0)  # the last run's time replaces the earlier one
    cache.put_duration("Index/gather", 4.0)
    ordered = [c.task_id for c in runs.longest_first(cands, cache)]
    assert ordered == ["LinearAlgebra/det", "Loss/new", "Math/add"]  # unknown: the median, 4 s
    assert cache.durations() == {"Math/add": 1.0, "LinearAlgebra/det": 30.0, "Index/gather": 4.0}
    assert runs.longest_first(cands, None) == cands  # no cache: source order


def test_a_cold_run_forgets_the_baselines_but_not_the_job_times(tmp_path: Path):
    from kbx.evaluate.perf import BaselineCache

    cache = BaselineCache(tmp_path / "baselines.sqlite")
    cache.put("some key", 1.5)
    cache.put_duration("Math/add", 3.0)
    cache.clear_baselines()
    assert cache.get("some key") == (False, None)
    assert cache.durations() == {"Math/add": 3.0}
