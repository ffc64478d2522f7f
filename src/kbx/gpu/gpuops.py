"""GPU work under the shared GPU lock, heavy CPU work outside it.

A task's ``make_inputs`` mixes CPU work (float64 draws and factorisations: seconds on one thread)
with GPU work (draws of benchmark sizes, copies to the device).  Held around the whole call, the
lock makes every timing on that GPU wait for the CPU work too, tens of seconds for some tasks
(docs/design/throughput.md, GPU lock and timing turns).  Inside ``gpu_ops_locked``, the first aten
operation that touches the locked device type (or creates a tensor there) takes a shared hold, which
stays through the operations that follow until a CPU operation comes that is heavy (on
``HEAVY_NUMEL`` elements or more) or comes ``HOLD_S`` or more after the hold began (a loop of small
CPU work): the GPU work is finished and the hold let go before that operation runs.  A run of GPU
operations that a timing waits for makes way for it (``gpulock.make_way``) between two of them.

One hold and one synchronization per run of GPU operations, not per operation: a hold and a sync for
each of a task's few hundred operations make its inputs seconds slower with many children building
at once, since each sync waits for the GPU's time slices to come round.
"""

from __future__ import annotations

import threading
import time
from contextlib import AbstractContextManager, ExitStack, nullcontext
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from kbx.gpu.gpulock import shared

HEAVY_NUMEL = 1 << 14  # CPU operations on this many elements or more run without the hold
HOLD_S = 0.05  # ... and any CPU operation once a hold is this old


def gpu_ops_locked(
    lock: str | None, what: str, device_type: str = "cuda"
) -> AbstractContextManager[Any]:
    """``with gpu_ops_locked(lock, what): ...``: nothing to do without a lock (the CPU);
    ``device_type`` other than "cuda" for tests."""
    return LockedOps(lock, what, device_type) if lock else nullcontext()


class LockedOps(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """Not wrapped in ``torch._dynamo.disable``, which imports torch._dynamo (some 800
        modules) at the mode's first operation (``preload``).  Nothing is compiled under this
        mode: it covers trusted eager code (inputs, references, checks)."""
        return False

    def __init__(self, lock: str, what: str, device_type: str) -> None:
        super().__init__()
        self.lock, self.what, self.device_type = lock, what, device_type
        self.hold: shared | None = None
        self.since = 0.0  # when the hold was taken

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        leaves = tree_leaves((args, kwargs))
        if self.touches(leaves):
            if self.hold is None:
                self.hold = shared(self.lock, self.what)
                self.hold.__enter__()
                self.since = time.monotonic()
            elif self.hold.make_way(self.sync):  # a timing waited: it has had its turn
                self.since = time.monotonic()
        elif self.hold is not None and (
            heavy(leaves, args, kwargs) or time.monotonic() - self.since >= HOLD_S
        ):
            self.release()
        return func(*args, **kwargs)

    def sync(self) -> None:
        if self.device_type == "cuda":
            finish_gpu_work()

    def release(self) -> None:
        """Finish the GPU work done under the hold, then let the hold go."""
        hold, self.hold = self.hold, None
        if hold is None:
            return
        try:
            self.sync()
        finally:
            hold.__exit__(None, None, None)

    def __exit__(self, *exc: Any) -> None:
        try:
            self.release()
        finally:
            super().__exit__(*exc)

    def touches(self, leaves: list[Any]) -> bool:
        for x in leaves:
            if isinstance(x, torch.Tensor) and x.device.type == self.device_type:
                return True
            if isinstance(x, torch.device) and x.type == self.device_type:
                return True
        return False


def finish_gpu_work() -> None:
    """Wait for the GPU work of the hold that ends (the process's threads share the default
    stream: the whole device; docs/design/throughput.md, Check threads)."""
    torch.cuda.synchronize()


def on_device(gpu: int | None) -> AbstractContextManager[Any]:
    """The trusted process's GPU work (references, checks) on ``gpu`` (None: the current
    device, or the CPU without CUDA)."""
    stack = ExitStack()
    if gpu is not None:
        stack.enter_context(torch.cuda.device(gpu))
    return stack


def preload() -> None:
    """The first operation under ``LockedOps``, before any thread's: with torch's wrapper of
    dispatch modes it would import torch._dynamo, sympy and triton's compiler (some 800
    modules, seconds), so ``LockedOps`` opts out of that wrapper (docs/design/throughput.md,
    Imports under dispatch modes).  Initialises nothing on the GPU."""
    with LockedOps("", "preload", "cuda"):
        torch.ones(1).add_(1)  # a CPU operation: no hold is taken


# Clear while a process loads what its threads' first torch operations would import
# (``begin_loading``; ``runs.Scheduler.load``): until then those threads run none
# (``wait_loaded``).  A first operation under a dispatch mode wrapped by torch (fake tensors,
# and ``LockedOps`` without its opt-out) imports torch._dynamo, which registers operators; that
# import, begun by many threads at once while others dispatch, can crash the process (a
# segfault with torch 2.11: docs/design/throughput.md, Imports under dispatch modes).
_loaded = threading.Event()
_loaded.set()


def begin_loading() -> None:
    """This process's threads wait at ``wait_loaded`` until ``done_loading``."""
    _loaded.clear()


def done_loading() -> None:
    _loaded.set()


def wait_loaded() -> None:
    """Before a thread's torch operations: wait while the process is still loading."""
    _loaded.wait()


def make_context(gpu: int | None) -> None:
    """This process's CUDA context on ``gpu`` (None: the current device), made now."""
    torch.cuda.synchronize(gpu)


def heavy(leaves: list[Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether an operation works on HEAVY_NUMEL elements or more: its tensors' (``leaves``, of
    its arguments), or for a factory (``randn``, ``zeros``...) the size it is given."""
    numel = sum(x.numel() for x in leaves if isinstance(x, torch.Tensor))
    for x in (*args, *kwargs.values()):
        if isinstance(x, list | tuple) and x and all(isinstance(d, int) for d in x):
            size = 1
            for d in x:
                size *= d
            numel = max(numel, size)
    return numel >= HEAVY_NUMEL
