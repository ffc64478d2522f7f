"""Trusted baseline processes (eager, torch.compile) kept between tasks (``baseline_worker``).

A process per task paid Python's, torch's, kbx's and inductor's start-up (seconds of CPU) for
every task of a cold run, while the candidates' children compiled on the same cores.  A worker
here answers one request per line: ``{"task", "kinds", "cases", "lock", "core"}`` in, one line
marked ``MARK`` with ``{"ok": {"<case>:<kind>": ms or null}}`` or ``{"error": "..."}`` out (other
lines on its stdout are ignored).  Idle workers wait in a pool per GPU; one that times out, exits or
answers garbage is killed, and the caller falls back to a process of its own
(``baselines.in_worker``); one that holds the GPU lock for ``HOLD_S`` while others wait is killed
once it has written its stacks to its log, and its task's baselines fail (``WorkerHeld``).  A
worker's CUDA context is a standing hold in its GPU's memory budget (``kbx.gpu.budget``), split
from the reservation of the request it was started for; an idle worker is let go when a
reservation waits, and every idle one when the baselines stage ends.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from kbx.core import incidents
from kbx.core.config import Limits
from kbx.gpu import footprint, lockholders
from kbx.gpu.budget import Grant

MARK = b"KBX-BASELINE "
TASKS_PER_WORKER = 24  # then a fresh process: compiled graphs and allocator state stay bounded
HOLD_S = Limits().hold_s  # a worker that holds the GPU lock this long while others wait is ended


class WorkerFailed(Exception):
    """The worker did not answer (timed out, exited, or wrote no reply): not the task's fault."""


class WorkerHeld(WorkerFailed):
    """The worker held the GPU lock for ``HOLD_S`` while others waited: its stacks are in its
    log, and a process of its own would most likely hold it again (no second try)."""


class Worker:
    """One baseline process; ``standing``: its context's hold in the GPU's memory budget."""

    def __init__(self, cmd: list[str], env: dict[str, str], standing: Grant | None = None) -> None:
        self.standing = standing
        log = incidents.stream("baseline-worker")  # its traces and warnings: never the terminal
        self.log = log.name if log is not None else None
        try:
            self.proc = subprocess.Popen(
                cmd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log if log is not None else subprocess.DEVNULL,
                bufsize=0,
            )
        except OSError:
            if standing is not None:
                standing.release()
            raise
        finally:
            if log is not None:
                log.close()
        self.buffer = b""
        self.served = 0

    def ask(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one request and wait for its reply (``WorkerFailed`` if none comes in time)."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        except OSError as exc:
            raise WorkerFailed(f"cannot write to the baseline worker: {exc}") from None
        deadline = time.monotonic() + timeout_s
        lock = request.get("lock")
        watch = lockholders.Watch(lock, self.proc.pid) if lock else None
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                line, self.buffer = self.buffer[:end], self.buffer[end + 1 :]
                if line.startswith(MARK):
                    self.served += 1
                    try:
                        reply = json.loads(line[len(MARK) :])
                    except ValueError:
                        raise WorkerFailed("the baseline worker's reply is not JSON") from None
                    if not isinstance(reply, dict):
                        raise WorkerFailed("the baseline worker's reply is not an object")
                    if "error" in reply and self.log is not None:
                        reply["log"] = str(self.log)  # its trace is there
                    return reply
                continue  # something else printed to stdout (torch, inductor)
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerFailed(f"no reply from the baseline worker in {timeout_s:.0f} s")
            if watch is not None and (held := watch.held_s()) > HOLD_S:
                self.held(held, watch.waiting)
            assert self.proc.stdout is not None
            ready, _, _ = select.select([self.proc.stdout], [], [], min(left, lockholders.LOOK_S))
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    raise WorkerFailed(f"the baseline worker exited ({self.proc.poll()})")
                self.buffer += chunk

    def held(self, held_s: float, waiting: int) -> None:
        """``WorkerHeld``, once the worker has written its stacks to its log (``SIGUSR1``,
        ``baseline_worker.stacks_on_request``).  Trusted code: a worker that holds the GPU lock
        while others wait is kbx's own fault (docs/design/throughput.md, A hold that never
        ended), which the run reports against that task instead of stalling every GPU job
        behind it."""
        with contextlib.suppress(OSError):
            os.kill(self.proc.pid, signal.SIGUSR1)
        time.sleep(1.0)  # its stacks written before it is killed
        raise WorkerHeld(
            f"the baseline worker held the GPU lock for {held_s:.0f} s while {waiting} other "
            f"processes waited for it (its stacks: {self.log})"
        )

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        if self.standing is not None:
            self.standing.release()

    def idle_costs(self) -> bool:
        """Whether keeping it idle would hold memory a waiting reservation needs."""
        room = self.standing.budget if self.standing is not None else None
        return room is not None and room.pressed()


class Pool:
    """Idle workers per key (the GPU a worker sees), started on demand."""

    def __init__(self, cmd: list[str]) -> None:
        self.cmd = cmd
        self.idle: dict[Any, list[Worker]] = {}
        self.lock = threading.Lock()

    def ask(
        self,
        key: Any,
        env: dict[str, str],
        request: dict[str, Any],
        timeout_s: float,
        grant: Grant | None = None,
    ) -> dict[str, Any]:
        """The reply of an idle worker of ``key``, or of one started for it, whose context's
        memory is split from the request's reservation ``grant``."""
        with self.lock:
            spare = self.idle.get(key) or []
            worker = spare.pop() if spare else None
        if worker is None:
            bare = grant.budget.context if grant is not None and grant.budget else 0
            context = footprint.used_context(bare)  # a worker keeps what its tasks loaded
            standing = grant.split(context, "baseline worker") if grant is not None else None
            worker = Worker(self.cmd, env, standing)
        try:
            reply = worker.ask(request, timeout_s)
        except BaseException:
            worker.close()
            raise
        if worker.served >= TASKS_PER_WORKER or worker.idle_costs():
            worker.close()
        else:
            with self.lock:
                self.idle.setdefault(key, []).append(worker)
        return reply

    def close(self) -> None:
        with self.lock:
            workers = [w for ws in self.idle.values() for w in ws]
            self.idle.clear()
        for worker in workers:
            worker.close()


POOL = Pool([sys.executable, "-m", "kbx.evaluate.baseline_worker", "--serve"])
atexit.register(POOL.close)
