"""The trusted side's reference outputs: the inputs of each case and the reference's output on
them, computed in this process (never from candidate code), cached, or computed ahead.

Correctness cases and their refills are cached for the life of a ``References`` (the run's
process); benchmark outputs are too large to keep and are computed when the judge needs them,
or ahead of it within a byte budget.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import torch
from torch.utils._pytree import tree_leaves, tree_map

from kbx.gpu import budget, footprint
from kbx.gpu.budget import Grant
from kbx.gpu.gpuops import gpu_ops_locked, on_device, wait_loaded
from kbx.gpu.placement import CPU, Placement
from kbx.suite.task import Case, Inputs, Task
from kbx.suite.tensors import detached, fresh_arguments, full_fp32, refill_case, to_cpu

# The trusted process computes references and eager baselines in full float32: TF32 is off for
# cuBLAS and cuDNN, as in the candidate's child (docs/design/tolerances.md).
full_fp32()

Key = tuple[str, str, str, int]  # task id, device, kind of output, case index

# Reference outputs computed while candidates run (``prefetch``), in this process: its threads
# share one GIL, and many of them starve the job threads' judging (docs/design/throughput.md,
# Reference look-ahead)
AHEAD_WORKERS = 4
# Benchmark cases computed ahead, at most this many bytes (``Task.bytes_moved``) in flight on one
# GPU, the workers of ``kbx.run.workers`` that share it together (each is told its part in
# ``Tuning.ahead_bytes``).  Most tasks have a benchmark case over 256 MB, so a per-case cap would
# leave their checks on the job's critical path; a larger budget costs GPU memory without
# shortening the run (docs/design/throughput.md, Reference look-ahead).  A case that does not fit
# when its task starts is computed when the judge needs it.
AHEAD_GPU_BYTES = 4 << 30


class References:
    """The reference outputs of one process's checks: correctness cases and their refills cached
    for its lifetime, benchmark cases computed ahead while candidates run (``prefetch``) on a
    few threads of its own, started on first use and ended by ``close``."""

    def __init__(self, workers: int = AHEAD_WORKERS) -> None:
        self.cache: dict[Key, Any] = {}
        self.ahead: dict[Key, Future[tuple[Inputs, Any]]] = {}
        self.ahead_bytes: dict[Key, int] = {}  # reserved by a prefetched bench case
        self.grants: dict[Key, Grant] = {}  # its reservation in the GPU's memory budget
        self.lock = threading.Lock()
        self.count = workers
        self.pool: ThreadPoolExecutor | None = None

    def workers(self) -> ThreadPoolExecutor:
        """The threads that compute ahead, started on first use; the caller holds ``lock``."""
        if self.pool is None:
            self.pool = ThreadPoolExecutor(self.count, thread_name_prefix="kbx-references")
        return self.pool

    def close(self) -> None:
        """Drop what was computed ahead and end the threads."""
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None
        with self.lock:
            self.ahead.clear()
            self.ahead_bytes.clear()
            for grant in self.grants.values():
                grant.release()
            self.grants.clear()

    def prefetch(self, task: Task, place: Placement, budget: int = AHEAD_GPU_BYTES) -> None:
        """Start computing what ``judge`` will need while the candidate runs: the correctness
        cases and their refills (cached like any), and in a timed run each benchmark case for the
        contents its last timed call gets (the case redrawn: see ``benchtime.time_case``), as far
        as ``budget`` allows.  Otherwise the judge's reference work (tens of seconds for
        linear-algebra tasks, whose inputs are drawn in float64 on the CPU) follows the child's
        (docs/design/throughput.md, Reference look-ahead).  ``expected`` takes a prefetched
        result when there is one; ``forget`` drops what a task's judge did not use."""
        wanted = [(k, i, 0) for k in ("cases", "refill") for i in range(len(task.cases))]
        if place.timed:
            wanted += [("timed_refill", i, task.held_bytes(c)) for i, c in enumerate(task.bench)]
        for kind, index, size in wanted:
            key = (task.id, place.device, kind, index)
            with self.lock:
                if key in self.ahead or key in self.cache:
                    continue
                if size and sum(self.ahead_bytes.values()) + size > budget:
                    continue
                if size and not self.room(key, task, index, place):
                    continue
                if size:
                    self.ahead_bytes[key] = size
                self.ahead[key] = self.workers().submit(self.compute_on, task, kind, index, place)

    def room(self, key: Key, task: Task, index: int, place: Placement) -> bool:
        """Reserve a benchmark case's look-ahead in its GPU's memory budget if it fits now (the
        caller holds ``lock``)."""
        if not place.cuda:
            return True
        need = footprint.ahead_bytes(task, task.bench[index])
        grant = budget.on(place.gpu).reserve(need, f"ahead {task.id} {index}", wait=False)
        if grant is None:
            return False
        self.grants[key] = grant
        return True

    def let_go(self, key: Key) -> None:
        """A look-ahead's reservation ends (the caller holds ``lock``): taken by its judge, whose
        job's reservation covers it from then on, or dropped."""
        self.ahead_bytes.pop(key, None)
        grant = self.grants.pop(key, None)
        if grant is not None:
            grant.release()

    def compute_on(self, task: Task, kind: str, index: int, place: Placement) -> tuple[Inputs, Any]:
        with on_device(place.current):
            return self.compute(task, kind, index, place)

    def forget(self, task: Task) -> None:
        """Drop a task's prefetched results (the judge stopped early, or the candidate failed)."""
        with self.lock:
            for key in [k for k in self.ahead if k[0] == task.id]:
                self.ahead.pop(key).cancel()
                self.let_go(key)

    def expected(
        self, task: Task, kind: str, index: int, place: Placement = CPU
    ) -> tuple[Inputs, Any]:
        """Inputs and reference output of one case, prefetched (``prefetch``) or computed now."""
        with self.lock:
            ahead = self.ahead.pop((task.id, place.device, kind, index), None)
            self.let_go((task.id, place.device, kind, index))
        # one still queued behind other tasks' is computed here instead (cancel() fails once
        # started)
        if ahead is not None and not ahead.cancel():
            try:
                return ahead.result()
            except Exception:  # noqa: BLE001, S110 - computed again below, reporting any fault
                pass
        return self.compute(task, kind, index, place)

    def compute(
        self, task: Task, kind: str, index: int, place: Placement = CPU
    ) -> tuple[Inputs, Any]:
        """Inputs and reference output (on the CPU) of one case; correctness cases and their refills
        are cached (benchmark outputs are too large to keep).  The inputs' GPU work and the
        reference run take the job's GPU lock op by op (``gpuops``): CPU work runs outside it, and a
        waiting timing gets its turn between two GPU operations."""
        wait_loaded()
        case: Case = (task.cases if kind in ("cases", "refill") else task.bench)[index]
        if kind in ("refill", "timed_refill"):
            case = refill_case(case)
        device, lock = place.device, place.lock
        with gpu_ops_locked(lock, "check inputs"):
            inputs = task.make_inputs(case, device)
        if kind not in ("cases", "refill"):  # bench and timed outputs of one case share its inputs
            # a property checker judges the values: the reference's shapes and dtypes are all the
            # judge needs of it, and they come without running it
            want = output_structure(task, inputs) if task.check is not None else None
            if want is None:
                with gpu_ops_locked(lock, f"check {task.id}"):  # each hold finished before it ends
                    want = run_reference(task, inputs, case.torch_seed, device, keep_device=True)
            return inputs, want
        key = (task.id, device, kind, index)
        with self.lock:
            if key in self.cache:
                return inputs, self.cache[key]
        with gpu_ops_locked(lock, f"check {task.id}"):  # two threads may both: the same value
            want = run_reference(task, inputs, case.torch_seed, device)
        with self.lock:
            return inputs, self.cache.setdefault(key, want)


def output_structure(task: Task, inputs: Inputs) -> Any | None:
    """The reference's output on ``inputs`` as meta tensors (shapes and dtypes, no values),
    worked out on fake tensors: nothing runs on any device.  None where that fails (an
    operation whose output depends on values, such as ``.item()``), or for an output that is
    not made of tensors and None.

    For a task judged by a property checker, the reference's output at benchmark sizes only
    gives the structure that the candidate's must have.  Running it would be the longest of the
    parent's GPU holds (linear-algebra references of seconds each), which every timing that
    comes meanwhile waits for, with the GPU's newcomers held back behind it
    (docs/design/throughput.md, GPU lock and timing turns).
    ``tests/evaluate/test_references.py`` checks the structure against the reference's own on
    every checked task's correctness cases."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    try:
        mode = FakeTensorMode()
        with mode:
            fake = map_tensors(inputs, mode.from_tensor)
            with torch.no_grad():
                out = task.reference(*fake.args, **fake.kwargs)
            if task.inplace:
                out = (out, tuple(fake.args[i] for i in task.inplace))
    except Exception:  # noqa: BLE001 - the reference is run instead
        return None
    leaves = tree_leaves(out)
    if not all(x is None or isinstance(x, torch.Tensor) for x in leaves):
        return None
    return tree_map(
        lambda t: (
            torch.empty(t.shape, dtype=t.dtype, device="meta") if isinstance(t, torch.Tensor) else t
        ),
        out,
    )


def preload() -> None:
    """A first operation on fake tensors (``output_structure``), before the job threads start:
    it imports and registers more of torch, as a dispatch mode's first operation does
    (``gpuops.preload``)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode()
    with mode:
        mode.from_tensor(torch.ones(2)).add(1)


SEEDED = threading.Lock()  # a random task's seed and draws, one thread at a time


def run_reference(
    task: Task, inputs: Inputs, seed: int, device: str, keep_device: bool = False
) -> Any:
    """The reference's outputs on the CPU, or (benchmark sizes, compared on the GPU anyway) left
    where they were computed.  A random task's reference draws from torch's one global generator,
    which it seeds: one at a time (``SEEDED``), or another thread's seed lands between the seed
    and the draw.  Any other task's reference leaves the generator alone: its seed, unlocked,
    could land between a random task's seed and draw, and two draws from the same seed would
    then look alike."""
    args, kwargs = fresh_arguments(inputs)
    with SEEDED if task.random else contextlib.nullcontext(), torch.no_grad():
        if task.random:
            torch.manual_seed(seed)
        out = task.reference(*args, **kwargs)
    if task.inplace:
        out = (out, tuple(args[i] for i in task.inplace))
    return detached(out) if keep_device else to_cpu(out)


def on_cpu(inputs: Inputs) -> Inputs:
    """The same inputs, their tensors copied to the CPU (everything else as it is)."""
    return map_tensors(inputs, lambda t: t.detach().cpu())


def map_tensors(inputs: Inputs, fn: Any) -> Inputs:
    """``inputs`` with ``fn`` applied to every tensor, at any depth (everything else kept)."""
    args, kwargs = tree_map(
        lambda v: fn(v) if isinstance(v, torch.Tensor) else v,
        (tuple(inputs.args), dict(inputs.kwargs)),
    )
    return Inputs(args, kwargs)
