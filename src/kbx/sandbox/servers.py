"""The parent's side of the fork servers: one server process per (device, threads) of a
process's children, started on first use or adopted from the process that launched it, and the
children it forks, which the sandbox waits for as it would for a ``Popen``.

``ForkServers`` is the set a scheduler owns for its lifetime: it starts them, remembers where
forking was given up (children that failed to set up: fresh interpreters from then on), and
closes them.  The server process itself is ``kbx.sandbox.child.forkserver``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field

from kbx.core import incidents, trace

SERVER_MODULE = "kbx.sandbox.child.forkserver"  # started by name: the parent never imports it
READY_TIMEOUT_S = 120.0  # the server's own start-up: imports of torch and triton
# idle spares per set of visible devices: on a GPU several, since jobs start one or two a second
# there and a context takes seconds under load (``spares``); on the CPU one (nothing to make
# but the fork)
SPARES = {"cuda": 8, "cpu": 1}


@dataclass
class ForkedProcess:
    """A child forked by the server, with the parts of ``Popen`` the sandbox uses."""

    server: ForkServer
    pid: int
    returncode: int | None = field(default=None)

    def wait(self, timeout: float | None = None) -> int:
        """The exit code (negative: the signal), waiting for it; as ``Popen.wait``, it may be
        asked again."""
        if self.returncode is None:
            self.returncode = self.server.exit_code(self.pid, timeout)
        return self.returncode


class ForkServer:
    """Parent side: one server process per (device, threads), shared by the job threads; started
    here (``launch``) or, by another process, for this one (``adopted``: its socket and pid)."""

    def __init__(
        self,
        device: str,
        env: dict[str, str],
        spare_count: int = 0,
        first: dict[str, int] | None = None,
        adopted: tuple[socket.socket, int] | None = None,
    ) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        if adopted is None:
            self.sock, self.proc = launch(device, env, spare_count, first)
            self.pid = self.proc.pid
        else:
            self.sock, self.pid = adopted
        self.send_lock = threading.Lock()
        self.changed = threading.Condition()
        self.pids: dict[int, int] = {}
        self.exits: dict[int, int] = {}
        self.next_id = 0
        self.alive = True
        self.ready = False
        threading.Thread(target=self.read, daemon=True, name="kbx-forkserver").start()
        with self.changed:
            if not self.changed.wait_for(lambda: self.ready or not self.alive, READY_TIMEOUT_S):
                self.alive = False
        if not self.ready:
            self.close()
            raise RuntimeError("the fork server did not start")

    def read(self) -> None:
        while True:
            try:
                data = self.sock.recv(1 << 16)
            except OSError:
                data = b""
            with self.changed:
                if not data:
                    self.alive = False
                    self.changed.notify_all()
                    return
                msg = json.loads(data)
                if msg.get("ready"):
                    self.ready = True
                    trace.mark("fork server ready for this process")
                elif "exit" in msg:
                    self.exits[msg["pid"]] = msg["exit"]
                else:
                    self.pids[msg["id"]] = msg["pid"]
                self.changed.notify_all()

    def spawn(
        self, job: str, cwd: str, env: dict[str, str], fds: list[int], plain: bool = False
    ) -> ForkedProcess:
        """Fork a child that runs ``job`` in ``cwd`` with ``env`` and the progress pipe, stdout
        and stderr given by ``fds`` (the caller keeps and closes its own copies); ``plain``: never
        a spare, and no spare forked after it (a compile stage's child, which has no GPU)."""
        with self.send_lock:
            self.next_id += 1
            ident = self.next_id
            request = {"id": ident, "job": job, "cwd": cwd, "env": env, "plain": plain}
            socket.send_fds(self.sock, [json.dumps(request).encode()], fds)
        with self.changed:
            self.changed.wait_for(lambda: ident in self.pids or not self.alive, 60.0)
            if ident not in self.pids:
                raise RuntimeError("the fork server did not start the child")
            return ForkedProcess(self, self.pids.pop(ident))

    def exit_code(self, pid: int, timeout: float | None) -> int:
        with self.changed:
            if not self.changed.wait_for(lambda: pid in self.exits or not self.alive, timeout):
                raise subprocess.TimeoutExpired(f"forked child {pid}", timeout or 0.0)
            if pid not in self.exits:  # kbx's fault, not the candidate's: a harness error
                raise RuntimeError(f"the fork server died; the exit of child {pid} is unknown")
            return self.exits.pop(pid)

    def close(self) -> None:
        self.alive = False
        try:
            self.sock.close()
        finally:
            if self.proc is not None:
                self.proc.kill()
                self.proc.wait()
            else:  # another process's child: it reaps it
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)


def launch(
    device: str, env: dict[str, str], spare_count: int, first: dict[str, int] | None
) -> tuple[socket.socket, subprocess.Popen[bytes]]:
    """Start a server process, without waiting for it: this end of its socket, and it.  Its
    stdout and stderr (and its spares', before a job gives them streams of their own) go to a log
    file of the run folder (``incidents.stream``), never to the terminal."""
    here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    folder = tempfile.mkdtemp(prefix="kbx-forkserver-")
    cmd = [sys.executable, "-X", "faulthandler", "-m", SERVER_MODULE, device, str(there.fileno())]
    cmd += [str(spare_count), json.dumps(first or {}), "1" if trace.enabled() else "0"]
    log = incidents.stream(f"forkserver-{device}")
    try:
        proc = subprocess.Popen(
            cmd,
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            pass_fds=(there.fileno(),),
            start_new_session=True,
        )
    except OSError:
        here.close()
        raise
    finally:
        there.close()
        if log is not None:
            log.close()
    return here, proc


class ForkServers:
    """The fork servers of one process, by device and thread count (``spares``: idle children
    per set of visible devices; None: ``SPARES`` of the device)."""

    def __init__(self, spares: int | None = None) -> None:
        self.spares = spares
        self.servers: dict[tuple[str, str], ForkServer] = {}
        self.given_up: dict[str, str] = {}  # device -> why its children are no longer forked
        self.adopted: dict[tuple[str, str], tuple[socket.socket, int]] = {}
        self.lock = threading.Lock()

    @staticmethod
    def key(device: str, env: dict[str, str]) -> tuple[str, str]:
        """One server per device and thread count of its children."""
        return device, env.get("OMP_NUM_THREADS", "")

    def adopt(self, device: str, sock: socket.socket, pid: int, env: dict[str, str]) -> None:
        """Take a server another process started for this one (``launch``, with ``env``) as
        this process's server for ``device``: ``server_for`` waits for it to be ready."""
        with self.lock:
            self.adopted[self.key(device, env)] = (sock, pid)

    def usable(self, device: str) -> bool:
        return device not in self.given_up

    def give_up(self, device: str, why: str) -> None:
        """Stop forking children for ``device`` (they failed to set up)."""
        if device not in self.given_up:
            self.given_up[device] = why
            sys.stderr.write(f"kbx: fork server off for {device} ({why[:200]}); fresh processes\n")

    def spare_count(self, device: str) -> int:
        return spare_count(device, self.spares)

    def server_for(
        self, device: str, env: dict[str, str], first: dict[str, int] | None = None
    ) -> ForkServer | None:
        """The running server for this device and thread count (started on first use, with
        ``first`` spares forked at once), or None if none can be started (the caller then
        starts a fresh interpreter)."""
        key = self.key(device, env)
        with self.lock:
            server = self.servers.get(key)
            if server is not None and server.alive:
                return server
            try:
                adopted = self.adopted.pop(key, None)
                server = ForkServer(device, env, self.spare_count(device), first, adopted)
            except (OSError, RuntimeError) as exc:
                self.give_up(device, f"{type(exc).__name__}: {exc}")  # not tried for every child
                return None
            self.servers[key] = server
            return server

    def close(self) -> None:
        """End every server this set started or adopted (their children end with them)."""
        with self.lock:
            servers, self.servers = list(self.servers.values()), {}
        for server in servers:
            server.close()


def spare_count(device: str, spares: int | None = None) -> int:
    """Idle children per set of visible devices: ``spares`` (``Tuning.spares``), else ``SPARES``
    of the device."""
    return spares if spares is not None else SPARES.get(device, 0)
