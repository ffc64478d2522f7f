"""The fork server starts children as a fresh interpreter would: own folder, environment,
session and streams; exit codes as ``Popen`` gives them; and the sandbox can do without it."""

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbx.sandbox import servers, spawn
from kbx.sandbox.childenv import child_env, server_env
from kbx.sandbox.servers import ForkServers
from kbx.sandbox.wire.job import ChildConfig, Job

SPY = """
import json, os, sys, tempfile
print(json.dumps({"cwd": os.getcwd(), "home": os.environ.get("HOME"), "tmp": tempfile.gettempdir(),
                  "own_session": os.getsid(0) == os.getpid(), "path0": sys.path[0],
                  "keys": sorted(os.environ)}))
def gelu(input, approximate="none"):
    raise ValueError("spy")
"""

KILLER = """
import os, signal
def gelu(input, approximate="none"):
    os.kill(os.getpid(), signal.SIGKILL)
"""


def start(server, folder: Path, code: str, cfg: ChildConfig):
    folder.mkdir()
    (folder / "candidate.py").write_text(code)
    read_fd, write_fd = os.pipe()
    job = Job(
        task_id="Activation/gelu", bench=(), msg_fd=write_fd, key="", confine=None, config=cfg
    )
    (folder / "job.json").write_text(job.model_dump_json())
    with open(folder / "out.txt", "wb") as out, open(folder / "err.txt", "wb") as err:
        env = child_env(folder, cfg)
        proc = server.spawn("job.json", str(folder), env, [write_fd, out.fileno(), err.fileno()])
    os.close(write_fd)
    with os.fdopen(read_fd) as messages:
        events = [json.loads(line) for line in messages]
    return proc, events


@pytest.fixture(scope="module")
def pool() -> Iterator[ForkServers]:
    """One set of fork servers for the module's tests that fork real children (a server's
    imports take seconds); closed at the end, so that no server process is left."""
    shared = ForkServers()
    yield shared
    shared.close()


def test_forked_children_get_their_own_folder_env_and_session(tmp_path, pool):
    cfg = ChildConfig(device="cpu", timed=False)
    server = pool.server_for("cpu", server_env(cfg))
    assert server is not None
    proc, events = start(server, tmp_path / "spy", SPY, cfg)
    assert proc.wait(60) == 0 and proc.wait() == 0  # asked twice, as Popen allows
    assert events[-1]["verdict"] == "runtime_error"
    seen = json.loads((tmp_path / "spy" / "out.txt").read_text().splitlines()[0])
    folder = str(tmp_path / "spy")
    assert seen["cwd"] == seen["home"] == seen["tmp"] == seen["path0"] == folder
    assert seen["own_session"]
    assert set(seen["keys"]) <= set(child_env(tmp_path / "spy", cfg)) | {"TRITON_INTERPRET"}


def test_a_signal_that_kills_a_forked_child_is_its_exit_code(tmp_path, pool):
    cfg = ChildConfig(device="cpu", timed=False)
    server = pool.server_for("cpu", server_env(cfg))
    assert server is not None
    proc, events = start(server, tmp_path / "killed", KILLER, cfg)
    assert proc.wait(60) == -signal.SIGKILL
    assert all(e.get("event") != "reject" for e in events)


def test_the_sandbox_also_runs_children_in_a_fresh_interpreter(tmp_path):
    from kbx.sandbox.spawn import run_child
    from kbx.suite import find
    from kbx.suite.verdict import Reject, Verdict

    cfg = ChildConfig(device="cpu", timed=False, fork_server=False)
    pool = ForkServers()  # offered, and not used: ``fork`` is off
    try:
        run_child(find("Activation/gelu"), KILLER, cfg, pool)
    except Reject as r:
        assert r.verdict == Verdict.CRASHED and "SIGKILL" in r.detail
    else:
        raise AssertionError("a killed child must be rejected")
    finally:
        pool.close()
    assert not pool.servers  # no server was started for it


def test_a_forked_child_that_cannot_set_up_sends_the_candidate_to_a_fresh_interpreter(
    tmp_path, monkeypatch
):
    """kbx's own failure to start a forked child must not become the candidate's verdict."""
    import subprocess
    import sys

    from kbx.sandbox.spawn import run_child
    from kbx.suite import find
    from kbx.suite.verdict import Reject, Verdict

    class BrokenServer:
        def spawn(self, job, cwd, env, fds, plain=False):
            return subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])

    pool = ForkServers()
    monkeypatch.setattr(pool, "server_for", lambda device, env: BrokenServer())
    cfg = ChildConfig(device="cpu", timed=False)
    try:
        run_child(find("Activation/gelu"), KILLER, cfg, pool)
    except Reject as r:
        assert r.verdict == Verdict.CRASHED and "SIGKILL" in r.detail  # the fresh child's
    else:
        raise AssertionError("a killed child must be rejected")
    finally:
        pool.close()
    assert not pool.usable("cpu")


def test_a_forked_child_whose_set_up_ran_out_of_gpu_memory_leaves_the_fork_server_on(
    monkeypatch,
):
    """The device being full for a moment is no fault of the fork server: the candidate runs
    again from it, a moment later, and the children after it are still forked."""
    import subprocess
    import sys
    import time

    from kbx.sandbox.spawn import run_child
    from kbx.suite import find
    from kbx.suite.verdict import Reject, Verdict

    spawned = []
    oom = (  # torch's message as a child on a full H200 wrote it: the tail alone says nothing
        'Traceback (most recent call last):\n  File "child.py", line 9, in setup\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a "
        "total capacity of 139.80 GiB of which 1.25 MiB is free. Including non-PyTorch memory, "
        "this process has 0 bytes memory in use. Of the allocated memory 196.18 MiB is allocated "
        "by PyTorch, and 1.82 MiB is reserved by PyTorch but unallocated. If reserved but "
        "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
        "to avoid fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n"
    )

    class FullServer:
        def spawn(self, job, cwd, env, fds, plain=False):
            spawned.append(time.monotonic())
            code = f"import sys; sys.stderr.write({oom!r}); raise SystemExit(70)"
            return subprocess.Popen([sys.executable, "-c", code], stderr=fds[2])

    pool = ForkServers()
    monkeypatch.setattr(pool, "server_for", lambda device, env: FullServer())
    monkeypatch.setattr(spawn, "MEMORY_WAIT_S", 1.0)
    try:
        run_child(find("Activation/gelu"), KILLER, ChildConfig(device="cpu", timed=False), pool)
    except Reject as r:
        assert r.verdict == Verdict.HARNESS_ERROR
        assert "torch.OutOfMemoryError: CUDA out of memory" in r.detail
    else:
        raise AssertionError("a child that could not start must be rejected")
    finally:
        pool.close()
    assert len(spawned) == 2 and pool.usable("cpu")
    assert spawned[1] - spawned[0] >= 1.0  # the second child waited for the memory


def test_a_server_that_cannot_start_is_not_retried_for_every_child(monkeypatch):
    starts = []

    def broken(device, env, spare_count, first=None, adopted=None):
        starts.append(device)
        raise RuntimeError("the fork server did not start")

    monkeypatch.setattr(servers, "ForkServer", broken)
    pool = ForkServers()
    try:
        assert pool.server_for("cpu", {}) is None
    finally:
        pool.close()
    assert not pool.usable("cpu") and starts == ["cpu"]


def test_a_server_started_by_another_process_is_adopted_not_started_again(tmp_path):
    cfg = ChildConfig(device="cpu", timed=False)
    env = server_env(cfg)
    sock, proc = servers.launch("cpu", env, 0, None)  # as the run's parent does for a worker
    pool = ForkServers()
    try:
        pool.adopt("cpu", sock, proc.pid, env)
        server = pool.server_for("cpu", env)
        assert server is not None and server.pid == proc.pid and server.proc is None
        child, events = start(server, tmp_path / "spy", SPY, cfg)
        assert child.wait(60) == 0 and events[-1]["verdict"] == "runtime_error"
    finally:
        pool.close()  # the adopted server with the rest
    assert proc.wait(30) is not None  # the process that launched it reaps it
    assert not pool.adopted  # taken once


def test_a_server_that_cannot_be_launched_for_a_worker_leaves_it_fresh_interpreters(monkeypatch):
    from kbx.run.servers import launch_server

    def refused(*args):
        raise OSError("no more processes")

    monkeypatch.setattr(servers, "launch", refused)
    pool = ForkServers()
    try:
        assert launch_server(pool, ChildConfig(device="cpu", timed=False), [None], 1) is None
    finally:
        pool.close()
    assert not pool.usable("cpu")


def test_a_plain_request_is_never_a_spare_and_forks_none(monkeypatch):
    """A compile stage's child (``plain``, no GPU) is forked for itself: it takes no spare made
    for a GPU and makes the server fork none; any other request takes a spare and refills."""
    from kbx.sandbox.child import forkserver

    calls: list[str] = []

    class Pool:
        def take(self, visible, data, fds):
            calls.append(f"take {visible}")
            return 7

        def fill(self, visible, mine):
            calls.append(f"fill {visible}")

        def sockets(self):
            return []

    monkeypatch.setattr(forkserver.os, "fork", lambda: calls.append("fork") or 99)
    plain = {"id": 1, "env": {"CUDA_VISIBLE_DEVICES": ""}, "plain": True}
    assert forkserver.start(plain, b"", [], Pool(), []) == 99
    assert calls == ["fork"]
    calls.clear()
    job = {"id": 2, "env": {"CUDA_VISIBLE_DEVICES": "0"}}
    assert forkserver.start(job, b"", [], Pool(), []) == 7
    assert calls == ["take 0", "fill 0"]
