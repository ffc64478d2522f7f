"""One call of the candidate in its child: fresh copies of the inputs in, a seeded call, its
outputs out to the host.

On the GPU every copy and the end of every call happen under the shared per-GPU lock
(``gpulock``, whose file the caller names: ``lock``), and a large output goes out in chunks, each
its own hold, so that a timing elsewhere waits for one chunk rather than a whole output.  kbx's
own torch work runs inside the harness range (``opcheck``), left out of the op evidence.
Anything the candidate raises becomes its ``CandidateFailure``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

import torch

from kbx.gpu.gpulock import shared
from kbx.gpu.placement import Placement
from kbx.sandbox.child.entry import failure
from kbx.suite.task import Inputs, Task
from kbx.suite.tensors import fresh_arguments, items, subclass, to_cpu

Harness = Callable[[], AbstractContextManager[Any]]  # marks kbx's own torch work (``opcheck``)
COPY_CHUNK_BYTES = 64 << 20  # one shared hold per chunk of a large output copied to the host


class Setting(Protocol):
    """Where the child calls the candidate (``runner.Plan`` is one)."""

    @property
    def place(self) -> Placement: ...  # the device, and its GPU lock (None on the CPU)

    @property
    def harness(self) -> Harness: ...


def copies(
    inputs: Inputs, lock: str | None, harness: Harness = nullcontext
) -> tuple[Any, dict[str, Any]]:
    """``fresh_arguments`` in a candidate's child (a GPU copy: under the shared lock)."""
    with shared(lock, "inputs in"), harness():
        return fresh_arguments(inputs)


def call(task: Task, entry: Callable[..., Any], inputs: Inputs, seed: int, at: Setting) -> Any:
    """One call on fresh copies of the inputs, seeded; returns outputs on the CPU."""
    args, kwargs = copies(inputs, at.place.lock, at.harness)
    return call_on(task, entry, args, kwargs, seed, at)


def call_on(
    task: Task,
    entry: Callable[..., Any],
    args: Any,
    kwargs: dict[str, Any],
    seed: int,
    at: Setting,
    keep: bool = True,
) -> Any:
    """One seeded call on these very buffers; returns outputs on the CPU (None without
    ``keep``: the call only has to finish)."""
    torch.manual_seed(seed)
    try:
        out = entry(*args, **kwargs)  # its launches take the GPU lock themselves
        with shared(at.place.lock, "call ends"):
            if at.place.device == "cuda":
                torch.cuda.synchronize()
        if not keep:
            return None
        if task.inplace:
            out = (out, tuple(args[i] for i in task.inplace))
        with at.harness():
            return copy_out(out, "outputs out", at.place.lock)
    except BaseException as exc:  # noqa: BLE001 - anything the candidate raises is its verdict
        raise failure(exc) from None


def copy_out(x: Any, what: str, lock: str | None) -> Any:
    """``to_cpu`` in a candidate's child: a GPU tensor is copied under the shared lock in chunks
    of COPY_CHUNK_BYTES, each its own hold, so that a timing elsewhere waits for one chunk
    (milliseconds) rather than for a whole output of hundreds of MB."""
    if isinstance(x, tuple | list):
        return tuple(copy_out(v, what, lock) for v in items(x))
    if subclass(x) is not None or not (isinstance(x, torch.Tensor) and x.is_cuda):
        return to_cpu(x)
    t = x.detach().as_subclass(torch.Tensor)
    if t.nbytes <= COPY_CHUNK_BYTES or not t.is_contiguous():
        with shared(lock, what):
            return t.cpu()
    # its pages faulted in here, unlocked: first touches cost more than the copy itself
    # (docs/design/throughput.md, GPU lock and timing turns)
    host = torch.empty(t.shape, dtype=t.dtype).zero_()
    src, dst = t.view(-1), host.view(-1)
    step = max(1, COPY_CHUNK_BYTES // t.element_size())
    for start in range(0, src.numel(), step):
        with shared(lock, what):
            dst[start : start + step].copy_(src[start : start + step])
    return host
