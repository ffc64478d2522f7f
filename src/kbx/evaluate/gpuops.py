"""GPU work under the shared GPU lock one torch operation at a time, CPU work unlocked.

A task's ``make_inputs`` mixes CPU work (float64 draws and factorisations: seconds on one thread)
with GPU work (draws of benchmark sizes, copies to the device).  Held around the whole call, the
lock made every timing on that GPU wait for the CPU work too: up to 41 s for one task on the H200
(docs/design/timing.md, Throughput).  Inside ``gpu_ops_locked``, each aten operation that touches
a tensor of the locked device type, or creates one there, runs under its own shared hold and has
finished on the GPU when the hold ends; every other operation runs without the lock.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from kbx.evaluate.gpulock import shared


def gpu_ops_locked(
    lock: str | None, what: str, device_type: str = "cuda"
) -> AbstractContextManager[Any]:
    """``with gpu_ops_locked(lock, what): ...``: nothing to do without a lock (the CPU);
    ``device_type`` other than "cuda" for tests."""
    return LockedOps(lock, what, device_type) if lock else nullcontext()


class LockedOps(TorchDispatchMode):
    def __init__(self, lock: str, what: str, device_type: str) -> None:
        super().__init__()
        self.lock, self.what, self.device_type = lock, what, device_type

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if not self.touches(args, kwargs):
            return func(*args, **kwargs)
        with shared(self.lock, self.what):
            out = func(*args, **kwargs)
            if self.device_type == "cuda":
                torch.cuda.synchronize()
        return out

    def touches(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        for x in tree_leaves((args, kwargs)):
            if isinstance(x, torch.Tensor) and x.device.type == self.device_type:
                return True
            if isinstance(x, torch.device) and x.type == self.device_type:
                return True
        return False
