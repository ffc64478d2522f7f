"""Spares of the fork server: forked ahead of a job, handed one job each, replaced; a ready one
is taken before an older one still making its context; one that died idle is forgotten; the
server forks a run's first spares before any job; and no child keeps a socket through which it
could send a spare a job."""

import functools
import json
import os
import socket
import time

import pytest

from kbx.sandbox.child import forkserver
from kbx.sandbox.child.spares import READY, Spares
from kbx.sandbox.childenv import server_env, visible_devices
from kbx.sandbox.servers import ForkServers
from kbx.sandbox.wire.job import ChildConfig

from .test_forkserver import start

# reports how long ago its process was forked, and which sockets it holds
AGE_AND_SOCKETS = """
import json, os
ticks = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19])
uptime = float(open("/proc/uptime").read().split()[0])
fds = [os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
       if os.path.exists(f"/proc/self/fd/{fd}")]
print(json.dumps({"age_s": uptime - ticks / os.sysconf("SC_CLK_TCK"),
                  "sockets": [fd for fd in fds if fd.startswith("socket:")]}))
def gelu(input, approximate="none"):
    raise ValueError("spy")
"""


def echo_body(visible, conn, close):
    """A spare that reports its visible devices and the request it got, then exits."""
    for sock in close:
        sock.close()
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 1)
    if fds:  # none: the pool closed its end
        with os.fdopen(fds[0], "w") as out:
            out.write(json.dumps({"visible": visible, "request": data.decode()}))
    os._exit(0)


def test_a_spare_takes_one_job_and_is_replaced():
    pool = Spares(2, echo_body)
    pool.fill("3", [])
    assert len(pool.idle["3"]) == 2
    read_fd, write_fd = os.pipe()
    pid = pool.take("3", b"job-1", [write_fd])
    os.close(write_fd)
    with os.fdopen(read_fd) as got:
        assert json.loads(got.read()) == {"visible": "3", "request": "job-1"}
    assert os.waitpid(pid, 0)[1] == 0
    assert len(pool.idle["3"]) == 1 and pool.take("7", b"job-2", []) is None  # none for GPU 7
    pool.fill("3", [])
    assert len(pool.idle["3"]) == 2
    for spare, conn in pool.idle.pop("3"):  # closing its socket ends an idle spare
        conn.close()
        os.waitpid(spare, 0)


def test_a_ready_spare_takes_the_job_before_an_older_one_still_making_its_context():
    def slow_then_fast(visible, conn, close):
        """The first spare forked never gets ready; the later one says so at once."""
        if visible == "fast":
            conn.send(READY)
        echo_body(visible, conn, close)

    pool = Spares(1, slow_then_fast)
    pool.fill("slow", [])
    slow = pool.idle.pop("slow")
    pool.fill("fast", [])
    pool.idle["both"] = slow + pool.idle.pop("fast")  # oldest first, as one set's spares
    [(slow_pid, _), (fast_pid, _)] = pool.idle["both"]
    deadline = time.monotonic() + 30
    while fast_pid not in pool.ready and time.monotonic() < deadline:
        pool.listen(pool.idle["both"])
        time.sleep(0.01)
    read_fd, write_fd = os.pipe()
    assert pool.take("both", b"job", [write_fd]) == fast_pid
    os.close(write_fd)
    with os.fdopen(read_fd) as got:
        assert json.loads(got.read())["visible"] == "fast"
    os.waitpid(fast_pid, 0)
    read_fd, write_fd = os.pipe()
    assert pool.take("both", b"job-2", [write_fd]) == slow_pid  # none ready: the oldest
    os.close(write_fd)
    with os.fdopen(read_fd) as got:
        assert json.loads(got.read())["visible"] == "slow"
    os.waitpid(slow_pid, 0)
    assert not pool.ready


def test_a_spare_taken_before_it_said_ready_still_gets_its_job():
    """The server sends the job and closes its end; READY comes before or after that close."""
    server, spare = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    spare.send(READY)  # unread by the server when it closes: the spare's socket is reset
    server.send(b"job")
    server.close()
    assert forkserver.next_job(spare) == (b"job", [])
    assert forkserver.next_job(spare) == (b"", [])  # then the server has gone
    server, spare = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server.send(b"job-2")
    server.close()
    forkserver.say_ready(spare)  # the server's end is closed already: no error
    assert forkserver.next_job(spare) == (b"job-2", [])


def test_a_spare_that_died_idle_is_forgotten_and_takes_no_job():
    def dies(visible, conn, close):
        os._exit(5)

    pool = Spares(1, dies)
    pool.fill("", [])
    [(pid, _)] = pool.idle[""]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # dead, not yet reaped: sending to it fails
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG):
                break
        except ChildProcessError:
            break
        time.sleep(0.01)
    assert pool.take("", b"job", []) is None
    pool.fill("", [])
    [(pid2, _)] = pool.idle[""]
    os.waitpid(pid, 0)
    os.waitpid(pid2, 0)
    assert pool.forget(pid) and not pool.forget(pid)  # the one take found dead, once
    assert pool.forget(pid2) and not pool.idle[""]


@pytest.mark.parametrize("count,first", [(1, 0), (0, 0), (1, 2)])
def test_the_servers_children_hold_no_socket_and_jobs_go_to_spares(tmp_path, count, first):
    cfg = ChildConfig(device="cpu", timed=False)
    first_spares = {forkserver_visible(cfg): first} if first else None
    pool = ForkServers(spares=count)  # as ``Tuning.spares`` sets it
    try:
        assert pool.spare_count("cpu") == count
        server = pool.server_for("cpu", server_env(cfg), first_spares)
        assert server is not None
        seen = []
        for n in range(2):
            time.sleep(2.0)  # a spare forked after the last job is 2 s old when this one comes
            proc, events = start(server, tmp_path / f"job{n}", AGE_AND_SOCKETS, cfg)
            assert proc.wait(60) == 0 and events[-1]["verdict"] == "runtime_error"
            seen.append(json.loads((tmp_path / f"job{n}" / "out.txt").read_text().split("\n")[0]))
    finally:
        pool.close()
    assert all(s["sockets"] == [] for s in seen)  # neither the server's nor a spare's
    # the first job of a set of devices is forked for it, unless the server forked spares for
    # that set at its start; later ones find a spare waiting
    assert (seen[0]["age_s"] > 1.5) == (first > 0)
    assert (seen[1]["age_s"] > 1.5) == (count > 0)


def forkserver_visible(cfg: ChildConfig) -> str:
    """The visible devices a job of ``cfg`` asks the server for (its spares' key)."""
    return visible_devices(cfg, None)


def test_a_server_whose_parent_goes_ends_quietly_with_its_spares(tmp_path, capfd):
    """Idle spares end with the server; their exits must not wake a server that is finishing."""
    cfg = ChildConfig(device="cpu", timed=False)
    pool = ForkServers(spares=2)
    try:
        server = pool.server_for("cpu", server_env(cfg))
        assert server is not None and server.proc is not None
        proc, _ = start(server, tmp_path / "job", AGE_AND_SOCKETS, cfg)  # spares come after it
        assert proc.wait(60) == 0
        server.sock.shutdown(socket.SHUT_RDWR)  # as when the parent exits
        assert server.proc.wait(60) == 0
    finally:
        pool.close()
    assert "Traceback" not in capfd.readouterr().err


def job_streams() -> tuple[list[int], int]:
    """A job's three descriptors (progress, stdout, stderr) and the read end of its stderr."""
    progress, out = os.open(os.devnull, os.O_WRONLY), os.open(os.devnull, os.O_WRONLY)
    err_read, err_write = os.pipe()
    return [progress, out, err_write], err_read


def test_a_spare_whose_context_failed_fails_its_job_with_the_reason_and_takes_no_other(capfd):
    """The GPU's memory was full when the spare made its context: the job the server had sent
    it already fails with that reason on the job's stderr (the parent reads a child that could
    not start, and why); the server's next send fails, so that job goes to another spare.  A
    spare that had no job yet says why on the server's stderr, which is its log file."""
    why = "Traceback (most recent call last):\ntorch.OutOfMemoryError: CUDA out of memory\n"
    server, spare = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    fds, err_read = job_streams()
    socket.send_fds(server, [b'{"id": 1}'], fds)  # sent while the spare made its context
    for fd in fds:
        os.close(fd)
    assert forkserver.failed_spare(spare, why) == 70
    with os.fdopen(err_read) as err:
        assert err.read() == why
    with pytest.raises(OSError):
        server.send(b'{"id": 2}')  # the next job cannot reach it
    idle_server, idle = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    assert forkserver.failed_spare(idle, why) == 70
    assert capfd.readouterr().err == why
    with pytest.raises(OSError):
        idle_server.send(b'{"id": 3}')


def test_a_real_spare_that_cannot_make_its_context_fails_only_the_job_it_was_given(capfd):
    """A spare of the real body asked for a CUDA context where there is none (this machine):
    a job it was handed ends with exit code 70 and the driver's reason on the job's stderr, or,
    failed before the job came, the job goes to no dead spare."""
    pool = Spares(1, functools.partial(forkserver.spare, "cuda"))
    pool.fill("0", [])
    fds, err_read = job_streams()
    pid = pool.take("0", b'{"id": 1, "job": "job.json", "cwd": "/", "env": {}}', fds)
    for fd in fds:
        os.close(fd)
    with os.fdopen(err_read) as err:
        told = err.read()
    if pid is not None:  # handed the job before its context failed
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 70
        assert "Traceback (most recent call last)" in told and "CUDA" in told
    else:  # failed first: the take found it gone, and it said why on the server's stderr
        assert told == "" and "CUDA" in capfd.readouterr().err
    for spare_pid, _ in pool.idle.get("0", []):
        os.waitpid(spare_pid, 0)
