"""What kbx's work costs in GPU memory: the card and one CUDA context, measured once at a run's
start (``measure``), and each kind of work estimated from its task's declared case sizes
(``Task.bytes_moved``), for the budget (``kbx.gpu.budget``).

Every figure here is a share of what was measured on the card, never a constant tuned to one
card (docs/design/memory.md).  A context's cost is measured as one more context of this process
on the GPU (driver API, in a thread of its own): the memory the card loses when a child or a
spare makes its own.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

from kbx.gpu import gpuops, gpuwait
from kbx.suite.task import Case, Task

GIB = 1 << 30
# The caching allocator's rounding (2 MiB blocks, 20 MiB segments) and what a case's
# ``bytes_moved``, a roofline's count of the bytes a kernel must move, leaves out
ALLOCATOR_SLACK = 1.1
# What a child's context grows to as it runs: the kernels it loads, cuBLAS's handle and
# workspace, Triton's modules, beyond a bare context
CONTEXT_GROWTH = 1.5
HEADROOM_SHARE = 32  # the card's memory over this stays free: the driver's own, fragments
SPARE_SHARE = 8  # idle spares' contexts take at most this share of the budget
FALLBACK_SHARE = 64  # a context that could not be measured counts as the card's memory over this
PROBE_S = 30.0  # the most the context probe may take


@dataclass(frozen=True)
class Card:
    """One GPU as measured at a run's start: its memory, what was free once this process's own
    context was made, one more context's cost (``measured``: False where the probe failed and
    ``FALLBACK_SHARE`` stands in), and the budget kbx may reserve on it."""

    name: str
    total: int
    free: int
    context: int
    budget: int
    measured: bool = True

    @property
    def headroom(self) -> int:
        return self.total // HEADROOM_SHARE

    def record(self) -> dict[str, object]:
        """The card as the budget's log records it."""
        return {
            "name": self.name,
            "total": self.total,
            "free": self.free,
            "context": self.context,
            "budget": self.budget,
            "context_measured": self.measured,
        }


def budget_bytes(free: int, total: int, context: int, cap_gib: float | None) -> int:
    """What kbx may reserve on a card: its free memory less the headroom, and within ``cap_gib``
    (``Tuning.gpu_memory_gb``), which counts this process's own context too."""
    room = free - total // HEADROOM_SHARE
    if cap_gib is not None:
        room = min(room, int(cap_gib * GIB) - context)
    return max(0, room)


def measure(gpu: int | None, cap_gib: float | None) -> Card | None:
    """The card of ``gpu`` (None: the current device), this process's context made first; None
    without CUDA."""
    import torch

    if not torch.cuda.is_available():
        return None
    index = torch.cuda.current_device() if gpu is None else gpu
    gpuops.make_context(gpu)  # this process's own: counted before the free memory is read
    context = context_bytes(index)
    free, total = torch.cuda.mem_get_info(index)
    measured = context is not None
    one = context if context is not None else total // FALLBACK_SHARE
    name = torch.cuda.get_device_name(index)
    return Card(name, total, free, one, budget_bytes(free, total, one, cap_gib), measured)


def context_bytes(ordinal: int) -> int | None:
    """What one more CUDA context takes on device ``ordinal``: the free memory before and after
    this process makes a second context there (in a thread of its own, so that no other thread's
    current context changes); None where the driver cannot say."""
    found: list[int] = []
    probe = threading.Thread(target=lambda: found.append(second_context(ordinal)), daemon=True)
    probe.start()
    probe.join(PROBE_S)
    return found[0] if found and found[0] > 0 else None


def second_context(ordinal: int) -> int:
    """Free bytes lost to a context made beside the primary one (0: a driver call failed)."""
    cuda = gpuwait.load_driver()
    if cuda is None:
        return 0
    dev, primary, made = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()
    before, after, total = ctypes.c_size_t(), ctypes.c_size_t(), ctypes.c_size_t()
    try:
        if cuda.cuDeviceGet(ctypes.byref(dev), ordinal) != 0:
            return 0
        if cuda.cuDevicePrimaryCtxRetain(ctypes.byref(primary), dev) != 0:
            return 0
        try:
            cuda.cuCtxSetCurrent(primary)
            if cuda.cuMemGetInfo_v2(ctypes.byref(before), ctypes.byref(total)) != 0:
                return 0
            if cuda.cuCtxCreate_v2(ctypes.byref(made), ctypes.c_uint(0), dev) != 0:
                return 0
            got = cuda.cuMemGetInfo_v2(ctypes.byref(after), ctypes.byref(total))
            cuda.cuCtxDestroy_v2(made)
            return int(before.value) - int(after.value) if got == 0 else 0
        finally:
            cuda.cuCtxSetCurrent(None)
            cuda.cuDevicePrimaryCtxRelease_v2(dev)
    except (AttributeError, OSError):  # a driver without these entry points
        return 0


def spares_room(card: Card) -> int:
    """How many idle spares' contexts fit in ``SPARE_SHARE`` of the budget (at least one)."""
    return max(1, card.budget // (SPARE_SHARE * max(1, card.context)))


def largest(task: Task) -> int:
    """The bytes of the task's largest benchmark case (its correctness cases where it has none)."""
    return max((task.held_bytes(c) for c in task.bench or task.cases), default=0)


def child_bytes(task: Task, timed: bool) -> int:
    """A child's tensors: every input it builds before the candidate runs (``Plan.build``: each
    correctness case and its refill, each benchmark case and, timed, its refill too), and the
    largest case's calls: a copy of its inputs and its output, or timed two input sets
    (``benchtime.input_sets``) and the probe's."""
    built = 2 * sum(task.held_bytes(c) for c in task.cases)
    built += (2 if timed else 1) * sum(task.held_bytes(c) for c in task.bench)
    calls = (3 if timed else 2) * largest(task)
    return int((built + calls) * ALLOCATOR_SLACK)


def check_bytes(task: Task) -> int:
    """The parent's judging of one benchmark case: its inputs, the reference's output kept on the
    GPU, the candidate's output brought there to compare."""
    return int(3 * largest(task) * ALLOCATOR_SLACK)


def baseline_bytes(task: Task) -> int:
    """A baseline worker's work on one task, less its context: a case's inputs, two timing sets of
    them and the reference's intermediates (torch.compile's included)."""
    return int(4 * largest(task) * ALLOCATOR_SLACK)


def ahead_bytes(task: Task, case: Case) -> int:
    """A benchmark case's reference computed ahead: its inputs and the output, kept on the GPU."""
    return int(2 * task.held_bytes(case) * ALLOCATOR_SLACK)


def used_context(context: int) -> int:
    """A context that has run work (a job's child, a baseline worker), not a bare one."""
    return int(context * CONTEXT_GROWTH)


def job_bytes(task: Task, timed: bool, context: int) -> int:
    """One job from its child's start to its result: the child's context and tensors, then (its
    child gone) the parent's check and, timed, any baseline measured for it."""
    after = max(check_bytes(task), baseline_bytes(task) if timed else 0)
    return used_context(context) + max(child_bytes(task, timed), after)
