"""A candidate's compile stage, run ahead of its GPU job: its kernels compiled by a child with no
GPU (``kbx.sandbox.child.precompile``) into the store of its code on its task
(``kbx.sandbox.kernels``), from which its GPU child's own cache is filled.

The compile child is a ``Child`` in every respect that confines it (its folder, uid, limits,
namespaces, the fork server's plain fork), with ``ChildConfig.compile_for`` set: it sees no GPU,
makes no CUDA context and sends nothing the parent reads.  The parent waits for it to exit, or
kills it at ``limit_s``, and copies what its cache gained into the store, as after any child.  No
verdict depends on this stage: what it failed to compile, the GPU child compiles itself
(docs/design/throughput.md, Compile ahead).
"""

from __future__ import annotations

import os
import time

from kbx.sandbox import kernels
from kbx.sandbox.servers import ForkServers
from kbx.sandbox.spawn import Child, ChildRun
from kbx.sandbox.wire.job import ChildConfig
from kbx.suite.task import Task

LIMIT_S = 120.0  # a compile stage's wall time; past it the GPU child compiles what is left
DRAIN_BYTES = 1 << 16


class CompileChild(Child):
    """A child that compiles and exits: followed only until its pipe ends or its time is up."""

    limit_s = LIMIT_S

    def follow(self, fd: int) -> ChildRun:
        began = time.monotonic()
        end = began + self.limit_s
        while (left := end - time.monotonic()) > 0:
            ready = select_read(fd, left)
            if ready and not os.read(fd, DRAIN_BYTES):  # the pipe's end: the child has exited
                break
        return ChildRun(stage_s={"ahead": round(time.monotonic() - began, 3)})


def select_read(fd: int, wait_s: float) -> bool:
    import select

    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(max(1, int(wait_s * 1000))))


def compile_ahead(
    task: Task,
    code: str,
    cfg: ChildConfig,
    arch: int,
    servers: ForkServers | None = None,
    limit_s: float = LIMIT_S,
) -> dict[str, float]:
    """Compile ``code``'s kernels for ``task`` on CUDA capability ``arch`` (90: sm_90) into the
    store of ``cfg.triton_cache``; the stage's figures: its wall seconds (``ahead``) and the
    bytes of kernels it left in the store (``ahead_bytes``).  Nothing is done without a store."""
    if kernels.entry(kernels.store_root(cfg.triton_cache), task.id, code) is None:
        return {}
    own = cfg.model_copy(update={"compile_for": arch, "gpu": None, "timed": False, "lock": None})
    child = CompileChild(task, code, own, servers)
    child.limit_s = limit_s
    before = kernels.stored_bytes(child.store)
    run = child.run()
    return dict(run.stage_s, ahead_bytes=float(kernels.stored_bytes(child.store) - before))
