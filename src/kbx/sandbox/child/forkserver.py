"""A fork server for candidate children: Python, torch, triton and kbx imported once, then one
``fork`` per candidate instead of a fresh interpreter (about 2 s of imports saved per child).

``python -m kbx.sandbox.child.forkserver DEVICE FD SPARES [FIRST]`` is started by the parent
(``ForkServer``) with the children's scrubbed environment; it never touches CUDA (a process that
initialised CUDA cannot fork children that use it). Over a ``SOCK_SEQPACKET`` socket it takes one
request per child (a JSON object: job file, working folder, environment; with the child's progress
pipe, stdout, stderr and its folder's own filesystem as file descriptors), hands it to a spare
child or forks one, and answers with the child's pid; when a child ends it sends its exit code
(negative: killed by that signal), as ``Popen.wait`` would give. Spares (``spares.py``) are forked
ahead of need and make their CUDA context before a job comes: ``SPARES`` idle ones per set of
visible devices (``Tuning.spares`` overrides it; 0: none); one whose context fails fails the job it
was given with the reason on that job's stderr (``failed_spare``). ``FIRST`` (JSON: visible
devices -> count) has the server fork that many spares for those devices as soon as it is ready,
before any request: a run's first jobs, one per job slot, all start at once, and with the spares
forked only after the first request most of them made their own context side by side.  The
server's own streams go to a log file of the run folder (``kbx.core.incidents``).

The child gets what a fresh one would: its own session (so it can be killed as a group), folder,
environment, standard streams and resource limits, then runs ``main.run_job``.  The process the
server forks calls ``confine.isolate`` first: the job then runs in a worker two forks below it,
in namespaces of its own, and the forked process ends with the worker's exit code or signal, so
that the server reports what ``Popen.wait`` would.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import select
import signal
import socket
import sys
import tempfile
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

from kbx.core import trace
from kbx.sandbox.child import confine, spares
from kbx.sandbox.wire.confinement import limit_resources

# a request's descriptors: the progress pipe, stdout, stderr, and (where the parent made one) the
# child's folder's own filesystem, which the child attaches in its mount namespace
FDS = 4


def serve(
    sock: socket.socket, device: str, spare_count: int, first: dict[str, int] | None = None
) -> int:
    """Import everything a child needs, then start one child per request (a spare, where one is
    idle for its devices) until the parent goes."""
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is first imported
    import torch  # noqa: F401 - imported here so that children start with it
    import triton  # noqa: F401

    from kbx.sandbox.child import (
        runner,  # noqa: F401
    )
    from kbx.suite import load_suite

    trace.mark("fork server: imported")
    load_suite()
    preload(device)
    trace.mark("fork server: suite and dispatch modes loaded")
    if torch.cuda.is_initialized():  # a forked child could not use CUDA
        raise RuntimeError("CUDA was initialised in the fork server")
    wake_r, wake_w = socket.socketpair()  # SIGCHLD wakes the select below
    wake_w.setblocking(False)
    signal.set_wakeup_fd(wake_w.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)
    mine = [sock, wake_r, wake_w]  # what a forked child closes first, with the idle spares'
    pool = spares.Spares(spare_count, functools.partial(spare, device))
    children: set[int] = set()
    for visible, count in (first or {}).items() if spare_count else ():  # none: spares are off
        pool.fill(visible, mine, max(count, spare_count))
    sock.send(json.dumps({"ready": True}).encode())
    trace.mark("fork server: ready, first spares forked")
    while True:
        ready, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in ready:
            wake_r.recv(4096)
        reap(children, pool, sock)
        if sock not in ready:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 20, FDS)
        except ConnectionResetError:
            data, fds = b"", []
        if not data:  # the parent has gone (exited, or killed by a time limit)
            no_wake_ups()  # idle spares end as the sockets close: their exits wake nothing
            return 0
        request = parse(data)
        pid = start(request, data, fds, pool, mine)
        children.add(pid)
        sock.send(json.dumps({"id": request["id"], "pid": pid}).encode())


def start(
    request: dict[str, Any],
    data: bytes,
    fds: list[int],
    pool: spares.Spares,
    mine: list[socket.socket],
) -> int:
    """The child of one request: a spare for its devices, else one forked for it; then the
    spares filled again.  A ``plain`` request (a compile stage's child, which has no GPU) is
    never given to a spare and makes none."""
    visible = request["env"].get("CUDA_VISIBLE_DEVICES", "")
    plain = bool(request.get("plain"))
    pid = None if plain else pool.take(visible, data, fds)
    if pid is None:  # no spare ready: fork one for this job
        pid = os.fork()
        if pid == 0:
            fresh(request, fds, mine + pool.sockets())
    for fd in fds:
        os.close(fd)
    if not plain:
        pool.fill(visible, mine)
    return pid


def preload(device: str) -> None:
    """What every child would otherwise load itself: torch's dispatch modes, the channel's
    message schemas (pydantic: about 80 ms a child, docs/design/libraries.md) and the modules a
    profiler's first session imports (``torch._inductor`` and ``torch._dynamo``, some 900: seconds
    of CPU a child, and ``opcheck`` opens a session a case).  CPU children get that first session
    itself; on a GPU host a session would start CUPTI, and forks could not use CUDA, so there the
    modules are only imported, with torch's CUDA checks through NVML, which leaves the driver
    alone (docs/design/throughput.md, Imports under dispatch modes).  Also the guard, with its
    census of trusted code (``guard_children``), and the interpreter's first launch
    (``interp.settle``), which each child would otherwise make itself, and kbx's modules every
    child imported after the fork: the job's schema, the op recorder, the output files
    (0.13 s a child on the 2-core development machine, docs/design/throughput.md, New
    candidates)."""
    from kbx.gpu import benchtime, gpuops
    from kbx.sandbox.child import interp, main, opcheck  # noqa: F401 - for the children
    from kbx.sandbox.wire import channel, job, outputs  # noqa: F401

    gpuops.preload()
    if device == "cpu":
        benchtime.prepare_profiler()
        interp.settle()
        interp.rules()  # its imports (libdevice's modules: some 0.4 s a child)
        guard_children(interp.triton_root())
        return
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    import torch
    import torch._inductor  # noqa: F401 - the profiler's start finds it imported

    if torch.cuda.is_initialized():
        raise RuntimeError("preloading torch._inductor initialized CUDA in the fork server")
    guard_children(None)


def guard_children(root: str | None) -> None:
    """The candidate's guard (``guard.install``), installed here once from frozen copies of
    kbx's modules: every child forked from now on has the audit hook and its census of trusted
    code (``root``: Triton's folder, whose code the interpreter's launch gate needs listed)."""
    from kbx.sandbox.child import bound, guard  # noqa: F401 - guard: frozen below

    frozen = bound.freeze().modules["kbx.sandbox.child.guard"]
    state = frozen.install()
    if root is not None:
        frozen.codes_under(state, root)


def parse(data: bytes) -> dict[str, Any]:
    """A child's request (the first marked for ``kbx.core.trace``)."""
    request: dict[str, Any] = json.loads(data)
    if request["id"] == 1:
        trace.mark("fork server: first request")
    return request


def reap(children: set[int], pool: spares.Spares, sock: socket.socket) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pool.forget(pid):
            continue  # a spare that died before it got a job: nobody waits for it
        children.discard(pid)
        sock.send(json.dumps({"pid": pid, "exit": os.waitstatus_to_exitcode(status)}).encode())


def no_wake_ups() -> None:
    """Undo the server's signal set-up: SIGCHLD no longer writes to the wake-up socket."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)


def detach(close: list[socket.socket]) -> None:
    """In a forked process: drop the server's sockets, signal set-up and session."""
    no_wake_ups()
    for conn in close:
        conn.close()
    os.setsid()
    limit_resources()


def exit_with(body: Callable[[], int]) -> NoReturn:
    """End a forked process with ``body``'s exit code; kbx's own fault before the job's streams
    are in place goes to the server's stderr, as exit code 70."""
    code = 70
    try:
        code = body()
    except BaseException:  # noqa: BLE001 - reported, never back into the server's loop
        traceback.print_exc()
    finally:
        os._exit(code)


def fresh(request: dict[str, Any], fds: list[int], close: list[socket.socket]) -> NoReturn:
    """A child forked for a job that no spare could take."""

    def body() -> int:
        detach(close)
        confine.isolate()  # returns in the worker only; this process ends as it ends
        return enter(request, fds)

    exit_with(body)


def spare(device: str, visible: str, conn: socket.socket, close: list[socket.socket]) -> NoReturn:
    """A spare's process: its CUDA context made, it waits for one job and runs it."""

    def body() -> int:
        detach(close)
        confine.isolate()  # before the context: it is made in the worker
        if visible:
            os.environ["CUDA_VISIBLE_DEVICES"] = visible  # before the context
        from kbx.sandbox.child import main

        try:
            main.make_context(device)
        except Exception:  # noqa: BLE001 - told to the job it was given, if any
            return failed_spare(conn, traceback.format_exc())
        trace.mark(f"spare: context made for {visible or 'all devices'}")
        say_ready(conn)
        data, fds = next_job(conn)
        conn.close()
        return enter(json.loads(data), fds) if data else 0  # no data: the server has gone

    exit_with(body)


def failed_spare(conn: socket.socket, why: str) -> int:
    """A spare whose context failed (the GPU's memory was full, say): its socket is shut for
    reading, so that the server's next send to it fails and the job goes to another spare; a job
    the server had sent it already fails with ``why`` on that job's stderr, which the parent
    reads as a child that could not start (its own reason, not an empty one).  Exit code 70, as
    for any fault of kbx's before the job's streams are in place."""
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RD)
    conn.setblocking(False)
    try:
        data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    except OSError:  # nothing queued (BlockingIOError), or the server has gone
        data, fds = b"", []
    if not data or len(fds) != 3:
        sys.stderr.write(why)  # the server's log
        return 70
    with contextlib.suppress(OSError):
        os.write(fds[2], why.encode(errors="replace"))
    for fd in fds:
        os.close(fd)
    return 70


def say_ready(conn: socket.socket) -> None:
    """Tell the server this spare's context is made.  It may have handed the spare a job and
    closed its end already: the job waits in the socket all the same."""
    with contextlib.suppress(OSError):
        conn.send(spares.READY)


def next_job(conn: socket.socket) -> tuple[bytes, list[int]]:
    """The request and descriptors the server sends a spare (empty: the server has gone).  A
    server that closed its end before it read READY leaves a reset on the socket, reported
    before the request queued ahead of it (Linux); the second read gets the request."""
    for _ in range(2):
        try:
            data, fds, _, _ = socket.recv_fds(conn, 1 << 20, FDS)
        except ConnectionResetError:
            continue
        except OSError:
            break
        return data, fds
    return b"", []


def enter(request: dict[str, Any], fds: list[int]) -> int:
    """In a detached child: take the job's streams, folder and environment, run it; its exit
    code (kbx's own fault: 70, reported on the child's stderr, like a fresh child)."""
    code = 70
    try:
        msg_fd, out_fd, err_fd, *_ = fds  # and the folder's filesystem: ``layers.own_disks``
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        for fd in (null, out_fd, err_fd):
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # computed again from the child's TMPDIR
        sys.path[0] = request["cwd"]  # as for ``python -m`` started in that folder
        sys.argv = ["-m", request["job"]]
        from kbx.sandbox.child import main

        code = main.run_job(request["job"], msg_fd)
    except BaseException:  # noqa: BLE001 - reported on the child's stderr
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # nothing left to report to
                stream.flush()
    return code


if __name__ == "__main__":
    channel = socket.socket(fileno=int(sys.argv[2]))
    first = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    trace.enable(len(sys.argv) > 5 and sys.argv[5] == "1")
    sys.exit(serve(channel, sys.argv[1], int(sys.argv[3]), first))
