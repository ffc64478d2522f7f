"""Spare children of the fork server: forked ahead of need for one GPU, each makes its CUDA
context and then waits for a job, so that a candidate's child starts with its context made.

Making a context took a median 3.9 s in each child of a warm run with 16 children per GPU, 32% of
that run's job time, against 0.38 s on an idle GPU (docs/validation/h200-2026-11-30g/).  A spare
makes it while earlier candidates run, off the jobs' path.  The server keeps ``count`` idle spares
per set of visible devices (``CUDA_VISIBLE_DEVICES``, which must be fixed before the context is
made); the rest of a child's setup (folder, environment, streams) comes with its job, as for a
child forked on demand.

Each spare holds its end of a socket pair; the server sends it the job's request and file
descriptors there, once.  A spare that died before it got a job (its context failed) is dropped
when the server reaps it; its exit is reported to no one.  Every child forked afterwards closes
the idle spares' sockets, so that no candidate can send a job to a spare.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import NoReturn

# body(visible devices, its socket, sockets it must close): the spare's process; never returns
Body = Callable[[str, socket.socket, list[socket.socket]], NoReturn]


class Spares:
    """The server's idle spares, by visible devices."""

    def __init__(self, count: int, body: Body) -> None:
        self.count = count
        self.body = body
        self.idle: dict[str, list[tuple[int, socket.socket]]] = {}
        self.gone: set[int] = set()  # spares found dead by ``take``, not reaped yet

    def sockets(self) -> list[socket.socket]:
        """The server's ends of the idle spares' sockets (a forked child closes them)."""
        return [conn for spares in self.idle.values() for _, conn in spares]

    def take(self, visible: str, request: bytes, fds: list[int]) -> int | None:
        """Hand the request and its descriptors to the oldest idle spare for ``visible``: its
        pid, or None where none could take it."""
        spares = self.idle.get(visible, [])
        while spares:
            pid, conn = spares.pop(0)
            try:
                socket.send_fds(conn, [request], fds)
            except OSError:
                self.gone.add(pid)  # it died and has not been reaped yet
                continue
            finally:
                conn.close()
            return pid
        return None

    def fill(self, visible: str, server_sockets: list[socket.socket]) -> None:
        """Fork spares for ``visible`` until ``count`` are idle."""
        spares = self.idle.setdefault(visible, [])
        while len(spares) < self.count:
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
