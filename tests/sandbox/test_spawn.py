"""The sandbox's stage limits: time spent queueing for the GPU lock is not the candidate's."""

import threading
import time
from collections.abc import Iterator

import pytest

from kbx.core.config import EvalConfig, Limits
from kbx.gpu.gpulock import exclusive
from kbx.sandbox.childenv import child_env, server_env, settings
from kbx.sandbox.servers import ForkServers
from kbx.sandbox.spawn import run_child
from kbx.sandbox.wire.job import ChildConfig
from kbx.suite import find
from tests.conftest import REFERENCE


@pytest.fixture(scope="module")
def pool() -> Iterator[ForkServers]:
    """The fork servers the module's children come from, as a run's are; closed at the end."""
    shared = ForkServers()
    yield shared
    shared.close()


def test_waiting_for_the_gpu_lock_does_not_time_the_candidate_out(tmp_path, pool):
    """Another job holds the lock for longer than the child's start-up limit; the child says it
    is waiting, so the wait is not counted against it, and it finishes once the lock is free."""
    lock = str(tmp_path / "gpu0.lock")
    tmp_path.chmod(0o755)  # as a run folder is: the child, of another uid, opens the lock there
    cfg = ChildConfig(device="cpu", timed=False, lock=lock, limits=Limits(setup_s=8.0))
    # the server started first, as a run's is: its start-up (seconds) is no part of the wait
    assert pool.server_for("cpu", server_env(cfg)) is not None
    held = threading.Event()

    def hold() -> None:
        with exclusive(lock):
            held.set()
            time.sleep(12.0)  # longer than setup_s: without the wait events the child times out

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    code = (REFERENCE / "Math" / "rsqrt.py").read_text()
    run = run_child(find("Math/rsqrt"), code, cfg, pool)
    holder.join()
    assert run.stage_s.get("lock", 0.0) > 5.0
    assert {kind for kind, _ in run.outputs} >= {"cases", "refill"}


def test_the_triton_cache_is_the_run_folders_unless_shared_and_keeps_autotuning(tmp_path):
    """Children compile into the run's own Triton cache by default; --triton-cache shares one
    across runs; either way autotuning results are cached with the kernels."""
    own = settings(EvalConfig(device="cpu", run_dir=tmp_path / "run"))
    env = child_env(tmp_path / "work", own)
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "run" / "triton-cache")
    assert env["TRITON_CACHE_AUTOTUNING"] == "1"
    shared = EvalConfig(device="cpu", run_dir=tmp_path / "run").tuned(triton_cache=tmp_path / "t")
    assert child_env(tmp_path / "work", settings(shared))["TRITON_CACHE_DIR"] == str(tmp_path / "t")


def test_a_finished_child_reports_its_cpu_time_and_where_its_setup_went(tmp_path, pool):
    """The parent reads the child's CPU seconds from the kernel before killing it (not from
    the child, which could say anything): the harness adds them up per run.  The child splits
    its setup (sent before the candidate is imported) into imports, CUDA context, inputs and
    launch hooks; the fork is the rest.  The kill's wait for the child's end is timed apart from
    the loading of its outputs."""
    from kbx.sandbox.childenv import process_cpu_s

    cfg = ChildConfig(device="cpu", timed=False)
    code = (REFERENCE / "Math" / "rsqrt.py").read_text()
    run = run_child(find("Math/rsqrt"), code, cfg, pool)
    assert 0.0 < run.stage_s["child_cpu"] < 600.0
    parts = [run.stage_s[f"setup_{p}"] for p in ("imports", "context", "inputs", "hooks")]
    assert all(p >= 0.0 for p in parts) and sum(parts) <= run.stage_s["setup"] + 0.01
    assert run.stage_s["kill"] >= 0.0 and run.stage_s["load"] >= 0.0
    assert process_cpu_s(2**22 + 7) is None  # no such process


def test_the_wait_for_the_fork_server_to_hand_over_a_child_is_its_own_stage(monkeypatch, pool):
    """Before the child's setup: a fork server still importing, or answering other requests,
    holds up the job there (the first jobs of a run on two H200s, 2026-12-01)."""
    cfg = ChildConfig(device="cpu", timed=False)
    real = pool.server_for("cpu", server_env(cfg))
    assert real is not None

    class Slow:
        def spawn(self, *args):
            time.sleep(0.3)
            return real.spawn(*args)

    monkeypatch.setattr(pool, "server_for", lambda device, env: Slow())
    code = (REFERENCE / "Math" / "rsqrt.py").read_text()
    run = run_child(find("Math/rsqrt"), code, cfg, pool)
    assert run.stage_s["spawn"] >= 0.3


def test_children_make_their_cuda_context_with_one_work_queue_unless_told(tmp_path, monkeypatch):
    """Told by ``Tuning.connections`` (it was the KBX_CONNECTIONS variable)."""
    cfg = ChildConfig(device="cuda", timed=True, gpu=1)
    assert child_env(tmp_path, cfg)["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"
    four = settings(EvalConfig(device="cuda", gpu=1).tuned(connections=4))
    assert child_env(tmp_path, four)["CUDA_DEVICE_MAX_CONNECTIONS"] == "4"
    none = cfg.model_copy(update={"connections": 0})  # the driver's own default
    monkeypatch.setenv("CUDA_DEVICE_MAX_CONNECTIONS", "2")  # the parent's is never passed on
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in child_env(tmp_path, none)
