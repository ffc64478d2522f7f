"""Spare children of the fork server: forked ahead of need for one GPU, each makes its CUDA
context and then waits for a job, so that a candidate's child starts with its context made.

Making a context takes seconds on a busy GPU, a third of a warm run's job time, against a fraction
of a second on an idle one (docs/design/throughput.md, Fork server and spares).  A spare makes it
while earlier candidates run, off the jobs' path.  The server keeps ``count`` idle spares
per set of visible devices (``CUDA_VISIBLE_DEVICES``, which must be fixed before the context is
made); the rest of a child's setup (folder, environment, streams) comes with its job, as for a
child forked on demand.

Each spare holds its end of a socket pair; the server sends it the job's request and file
descriptors there, once.  A spare says ``READY`` there once its context is made, and a job goes to
the oldest spare that has said so, else to the oldest (the nearest to ready): taken blindly, the
oldest is often one forked a moment before, and its job waits seconds for its context
(docs/design/throughput.md, Fork server and spares).  A spare that died before it got a job (its
context failed) is dropped when the server reaps it, or when its socket is found closed; its exit is
reported to no one.  Every child forked afterwards closes the idle spares' sockets, so that no
candidate can send a job to a spare.
"""

from __future__ import annotations

import os
import select
import socket
from collections.abc import Callable
from typing import NoReturn

# body(visible devices, its socket, sockets it must close): the spare's process; never returns
Body = Callable[[str, socket.socket, list[socket.socket]], NoReturn]

READY = b"ready"  # what a spare sends once its context is made


class Spares:
    """The server's idle spares, by visible devices."""

    def __init__(self, count: int, body: Body) -> None:
        self.count = count
        self.body = body
        self.idle: dict[str, list[tuple[int, socket.socket]]] = {}
        self.gone: set[int] = set()  # spares found dead by ``take``, not reaped yet
        self.ready: set[int] = set()  # idle spares that have said READY

    def sockets(self) -> list[socket.socket]:
        """The server's ends of the idle spares' sockets (a forked child closes them)."""
        return [conn for spares in self.idle.values() for _, conn in spares]

    def take(self, visible: str, request: bytes, fds: list[int]) -> int | None:
        """Hand the request and its descriptors to the oldest ready idle spare for ``visible``,
        else to the oldest idle one: its pid, or None where none could take it."""
        spares = self.idle.get(visible, [])
        self.listen(spares)
        ready_first = sorted(spares, key=lambda s: s[0] not in self.ready)  # stable: oldest first
        for pid, conn in ready_first:
            spares.remove((pid, conn))
            self.ready.discard(pid)
            try:
                socket.send_fds(conn, [request], fds)
            except OSError:
                self.gone.add(pid)  # it died and has not been reaped yet
                continue
            finally:
                conn.close()
            return pid
        return None

    def listen(self, spares: list[tuple[int, socket.socket]]) -> None:
        """Note which of ``spares`` have said READY since last asked (without waiting); one
        whose socket has closed died idle and is dropped, as ``take`` drops one it finds dead."""
        quiet = [conn for pid, conn in spares if pid not in self.ready]
        if not quiet:
            return
        readable, _, _ = select.select(quiet, [], [], 0)
        for pid, conn in list(spares):
            if conn not in readable:
                continue
            try:
                said = conn.recv(len(READY))
            except OSError:
                said = b""
            if said == READY:
                self.ready.add(pid)
            else:
                spares.remove((pid, conn))
                conn.close()
                self.gone.add(pid)

    def fill(
        self, visible: str, server_sockets: list[socket.socket], count: int | None = None
    ) -> None:
        """Fork spares for ``visible`` until ``count`` (default: the pool's) are idle."""
        spares = self.idle.setdefault(visible, [])
        while len(spares) < (self.count if count is None else count):
            here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            pid = os.fork()
            if pid == 0:
                try:
                    here.close()
                    self.body(visible, there, server_sockets + self.sockets())
                finally:
                    os._exit(70)  # a body must not return into the server's loop
            there.close()
            spares.append((pid, here))

    def forget(self, pid: int) -> bool:
        """True if ``pid`` was an idle spare (it has ended: nothing to report)."""
        self.ready.discard(pid)
        if pid in self.gone:
            self.gone.discard(pid)
            return True
        for spares in self.idle.values():
            for item in spares:
                if item[0] == pid:
                    spares.remove(item)
                    item[1].close()
                    return True
        return False
