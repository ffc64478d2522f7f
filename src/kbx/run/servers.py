"""Fork servers started for a run's processes: in the background where the children will be
forked (its imports overlap the rest of the set-up), or by the parent for a worker process,
which adopts it (its spares' contexts then need not wait for the worker's own imports).
"""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Sequence

import torch

from kbx.sandbox import servers as fork
from kbx.sandbox.childenv import first_spares, server_env
from kbx.sandbox.servers import ForkServers
from kbx.sandbox.wire.job import ChildConfig


def start_server(
    pool: ForkServers,
    cfg: ChildConfig,
    slots: Sequence[int | None] = (),
    launched: Launched | None = None,
) -> None:
    """Start the fork server of ``cfg``'s device in the background, where children will be
    forked: its imports (seconds) then overlap the rest of the run's set-up, and the first
    children, which wait for it (``forkserver.server_for``), find it ready or nearly.  ``slots``:
    the GPU of each job slot of this process; the server forks a spare for each at once, so
    that the run's first children, which all start together, find their contexts made.
    ``launched``: a server another process started for this one (``launch_server``)."""
    if launched is not None:
        pool.adopt(cfg.device, *launched)
    if forks(pool, cfg):
        threading.Thread(
            target=pool.server_for,
            args=(cfg.device, server_env(cfg), first_spares(cfg, slots)),
            daemon=True,
        ).start()


def forks(pool: ForkServers, cfg: ChildConfig) -> bool:
    """Whether ``cfg``'s children come from a fork server: asked for, not given up, and with
    something to fork for (not a CUDA configuration on a machine without a GPU)."""
    if not (cfg.fork_server and pool.usable(cfg.device)):
        return False
    return not cfg.device.startswith("cuda") or torch.cuda.is_available()


# a server started for another process: its socket, its pid and its environment
Launched = tuple[socket.socket, int, dict[str, str]]


def launch_server(
    pool: ForkServers, cfg: ChildConfig, slots: Sequence[int | None], spares: int
) -> tuple[Launched, subprocess.Popen[bytes]] | None:
    """Start, without waiting for it, the fork server of a worker process (``kbx.run.workers``) with
    ``spares`` idle spares and one for each of its ``slots``; the worker adopts it
    (``start_server``) and the caller reaps the process.  Started here, the server and its
    spares' contexts do not wait for the worker's own imports (seconds); None where there is
    nothing to fork for."""
    if not forks(pool, cfg):
        return None
    env = server_env(cfg)
    try:
        sock, proc = fork.launch(cfg.device, env, spares, first_spares(cfg, slots))
    except OSError as exc:  # as for a server that would not start: fresh interpreters
        pool.give_up(cfg.device, f"{type(exc).__name__}: {exc}")
        return None
    return (sock, proc.pid, env), proc
