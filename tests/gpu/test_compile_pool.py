"""Baseline workers kept between tasks: one marked reply per request, noise on stdout ignored,
a worker that hangs or dies is killed and reported, not reused."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbx.core import incidents
from kbx.gpu import compile_pool, footprint
from kbx.gpu.budget import Budget
from kbx.gpu.compile_pool import Pool, WorkerFailed
from kbx.gpu.placement import CPU
from kbx.sandbox.childenv import SOURCE_ROOT

# A stand-in server: replies with its pid; "hang" never replies, "die" exits.
FAKE = (
    "import json, os, sys, time\n"
    "for line in sys.stdin:\n"
    "    req = json.loads(line)\n"
    "    print('inductor says hello', flush=True)\n"
    "    if req['task'] == 'hang': time.sleep(60)\n"
    "    if req['task'] == 'die': sys.exit(3)\n"
    "    if req['task'] == 'hold':\n"
    "        import fcntl; f = open(req['lock'], 'a'); fcntl.flock(f, fcntl.LOCK_SH)\n"
    "        time.sleep(60)\n"
    "    print('KBX-BASELINE ' + json.dumps({'ok': {'pid': os.getpid()}}), flush=True)\n"
)


def ask(pool: Pool, task: str, timeout_s: float = 20.0) -> dict:
    return pool.ask(None, dict(os.environ), {"task": task}, timeout_s)


def test_a_worker_answers_task_after_task_then_is_replaced(monkeypatch):
    monkeypatch.setattr(compile_pool, "TASKS_PER_WORKER", 3)
    pool = Pool([sys.executable, "-c", FAKE])
    try:
        pids = [ask(pool, "Math/add")["ok"]["pid"] for _ in range(4)]
        assert pids[0] == pids[1] == pids[2] != pids[3]  # one process for 3 tasks, then a new one
    finally:
        pool.close()


def test_a_worker_that_hangs_or_dies_is_killed_and_reported():
    pool = Pool([sys.executable, "-c", FAKE])
    try:
        with pytest.raises(WorkerFailed, match="no reply"):
            ask(pool, "hang", timeout_s=1.0)
        with pytest.raises(WorkerFailed, match="exited"):
            ask(pool, "die")
        assert pool.idle == {}  # neither went back to the pool
        assert "pid" in ask(pool, "Math/add")["ok"]
    finally:
        pool.close()


def test_a_worker_that_holds_the_gpu_lock_while_others_wait_is_ended(tmp_path, monkeypatch):
    """A hold that never ends (the H100 run of 056dbd7) stalls every GPU job behind it: past
    ``HOLD_S`` with others waiting the worker is killed, its task's baselines fail with the
    reason, and no process of its own tries again (it would likely hold the lock again)."""
    monkeypatch.setattr(compile_pool, "HOLD_S", 1.5)
    lock = tmp_path / "gpu0.lock"
    lock.touch()
    pool = Pool([sys.executable, "-c", FAKE])
    waiter = None
    try:
        waiter = subprocess.Popen(
            [sys.executable, "-c", WAITER, str(lock)], stdin=subprocess.PIPE, text=True
        )
        began = time.monotonic()
        with pytest.raises(compile_pool.WorkerHeld, match="held the GPU lock for .* while 1 "):
            pool.ask(None, dict(os.environ), {"task": "hold", "lock": str(lock)}, 30.0)
        assert time.monotonic() - began < 15
        assert pool.idle == {}
        assert issubclass(compile_pool.WorkerHeld, WorkerFailed)
    finally:
        pool.close()
        if waiter is not None:
            waiter.kill()
            waiter.wait()


# Takes the lock exclusively a second after its start (a timing that queues behind the hold).
WAITER = (
    "import fcntl, sys, time\ntime.sleep(1.0)\nfcntl.flock(open(sys.argv[1], 'a'), fcntl.LOCK_EX)\n"
)


def test_the_baseline_server_reports_a_bad_request_and_goes_on(tmp_path):
    """The real ``baseline_worker --serve`` (no GPU needed to fail): an error reply naming the
    worker's log in the run folder, which holds the full trace; then the next request."""
    env = dict(os.environ, PYTHONPATH=SOURCE_ROOT)
    incidents.open_logs(tmp_path)
    pool = Pool(compile_pool.POOL.cmd)
    try:
        for _ in range(2):
            reply = pool.ask(None, env, {"task": "No/such", "kinds": "compile", "cases": "0"}, 60)
            assert reply.pop("error") == "ValueError: no task No/such"
            log = Path(reply.pop("log"))
            assert reply.keys() == {"cpu_s"} and 0.0 <= reply["cpu_s"] < 60.0  # its CPU time
        assert len(pool.idle[None]) == 1
    finally:
        pool.close()
    assert log.parent == tmp_path / "logs"
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "ValueError: no task No/such" in text


def test_a_failed_worker_leaves_the_task_to_a_process_of_its_own(monkeypatch):
    """``in_worker`` falls back to the one-process-per-task path, which reports its own failure
    (here: no CUDA for the inputs)."""
    from kbx.evaluate import baselines
    from kbx.suite import find

    def failing(*args, **kwargs):
        raise WorkerFailed("no reply")

    monkeypatch.setattr(compile_pool.POOL, "ask", failing)
    with pytest.raises(RuntimeError, match="baseline process for Math/add failed"):
        baselines.in_worker(find("Math/add"), [(0, "eager"), (0, "compile")], CPU)


def test_a_baseline_worker_computes_on_one_thread(monkeypatch):
    """32 workers with a thread per core each on 32 cores left the linear-algebra tasks'
    inputs unbuilt after 500 s (H200 x2): each worker gets one thread, and one compile thread."""
    from kbx.evaluate import baselines
    from kbx.suite import find

    envs = []

    def ask(key, env, request, timeout_s, grant=None):
        envs.append(env)
        return {"ok": {"0:eager": 1.0}, "cpu_s": 1.5}

    monkeypatch.setattr(compile_pool.POOL, "ask", ask)
    assert baselines.in_worker(find("Math/add"), [(0, "eager")], CPU) == (
        {(0, "eager"): 1.0},
        1.5,  # the CPU seconds it reported
    )
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TORCHINDUCTOR_COMPILE_THREADS"):
        assert envs[0][name] == "1"


def test_a_worker_keeps_a_used_contexts_worth_of_its_first_tasks_reservation():
    """A worker that has run baselines holds more than a bare context (cuBLAS's and cuDNN's
    workspaces, inductor's kernels): its standing hold is a used context's, as a job child's
    is, split from the reservation of the task it was started for."""
    room = Budget("gpu0", 10_000, context=100)
    assert footprint.used_context(100) > 100
    pool = Pool([sys.executable, "-c", FAKE])
    try:
        grant = room.reserve(footprint.used_context(100) + 500, "baselines Math/add")
        pool.ask(None, dict(os.environ), {"task": "Math/add"}, 20.0, grant)
        assert grant is not None
        grant.release()
        assert room.state()["standing"] == footprint.used_context(100)
    finally:
        pool.close()
    assert room.state()["standing"] == 0
