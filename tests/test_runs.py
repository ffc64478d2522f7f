"""The scheduler spreads jobs over GPUs; a child sees only its own GPU."""

from pathlib import Path

from kbx import runs
from kbx.candidate import Candidate
from kbx.evaluate.pipeline import EvalConfig
from kbx.evaluate.sandbox import SandboxConfig, child_env


def test_jobs_are_spread_over_the_gpus(monkeypatch):
    seen = []

    def fake_evaluate(candidate, cfg):
        seen.append(cfg.gpu)
        return candidate.task_id

    monkeypatch.setattr(runs, "evaluate", fake_evaluate)
    sched = runs.Scheduler(EvalConfig(device="cuda"), jobs=4, gpus=[0, 1])
    cands = [Candidate(f"s{i}", "Activation/gelu", "x") for i in range(10)]
    results = list(sched.run(cands))
    assert len(results) == 10
    assert set(seen) == {0, 1}
    assert sorted(sched.slots.queue, key=str) == [0, 0, 1, 1]


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
