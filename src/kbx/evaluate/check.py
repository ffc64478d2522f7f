"""Trusted side: reference outputs and the verdict on a candidate's outputs (parent process only).

This module never imports candidate code.  Reference outputs are computed once per task and
device and cached for the life of the run.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import torch
from torch.utils._pytree import tree_leaves, tree_map

from kbx.evaluate.compare import compare
from kbx.evaluate.tensors import (
    detached,
    fresh_arguments,
    full_fp32,
    refill_case,
    to_cpu,
)
from kbx.runtime.gpulock import waited_s
from kbx.runtime.gpuops import gpu_ops_locked, on_device, wait_loaded
from kbx.task import Case, Inputs, Task, Tolerance
from kbx.verdict import Reject, Verdict

# The trusted process computes references and eager baselines in full float32: TF32 is off for
# cuBLAS and cuDNN, as in the candidate's child (docs/design/tolerances.md).
full_fp32()

_cache: dict[tuple[str, str, str, int], Any] = {}
_lock = threading.Lock()

EXACT = Tolerance(rtol=0.0, atol=0.0)


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
_ahead: dict[tuple[str, str, str, int], Future[tuple[Inputs, Any]]] = {}
_ahead_bytes: dict[tuple[str, str, str, int], int] = {}  # reserved by a prefetched bench case
_ahead_pool = ThreadPoolExecutor(AHEAD_WORKERS, thread_name_prefix="kbx-references")


def prefetch(
    task: Task,
    device: str,
    lock: str | None,
    gpu: int | None,
    timed: bool,
    budget: int = AHEAD_GPU_BYTES,
) -> None:
    """Start computing what ``judge`` will need while the candidate runs: the correctness cases and
    their refills (cached like any), and in a timed run each benchmark case for the contents its
    last timed call gets (the case redrawn: see ``benchtime.time_case``), as far as ``budget``
    allows: otherwise the judge's reference work (tens of seconds for linear-algebra tasks, whose
    inputs are drawn in float64 on the CPU) follows the child's (docs/design/throughput.md,
    Reference look-ahead).  ``expected`` takes a prefetched result when there is one; ``forget``
    drops what a task's judge did not use."""
    wanted = [(k, i, 0) for k in ("cases", "refill") for i in range(len(task.cases))]
    if timed:
        wanted += [("timed_refill", i, int(task.bytes_moved(c))) for i, c in enumerate(task.bench)]
    for kind, index, size in wanted:
        key = (task.id, device, kind, index)
        with _lock:
            if key in _ahead or key in _cache:
                continue
            if size and sum(_ahead_bytes.values()) + size > budget:
                continue
            if size:
                _ahead_bytes[key] = size
            _ahead[key] = _ahead_pool.submit(compute_on, gpu, task, kind, index, device, lock)


def compute_on(
    gpu: int | None, task: Task, kind: str, index: int, device: str, lock: str | None
) -> tuple[Inputs, Any]:
    with on_device(gpu):
        return compute(task, kind, index, device, lock)


def forget(task: Task) -> None:
    """Drop a task's prefetched results (the judge stopped early, or the candidate failed)."""
    with _lock:
        for key in [k for k in _ahead if k[0] == task.id]:
            _ahead.pop(key).cancel()
            _ahead_bytes.pop(key, None)


def expected(
    task: Task, kind: str, index: int, device: str, lock: str | None = None
) -> tuple[Inputs, Any]:
    """Inputs and reference output of one case, prefetched (``prefetch``) or computed now."""
    with _lock:
        ahead = _ahead.pop((task.id, device, kind, index), None)
        _ahead_bytes.pop((task.id, device, kind, index), None)
    # one still queued behind other tasks' is computed here instead (cancel() fails once started)
    if ahead is not None and not ahead.cancel():
        try:
            return ahead.result()
        except Exception:  # noqa: BLE001, S110 - computed again below, where a fault is reported
            pass
    return compute(task, kind, index, device, lock)


def compute(
    task: Task, kind: str, index: int, device: str, lock: str | None = None
) -> tuple[Inputs, Any]:
    """Inputs and reference output (on the CPU) of one case; correctness cases and their refills
    are cached (benchmark outputs are too large to keep).  The inputs' GPU work and the
    reference run take the GPU ``lock`` op by op (``gpuops``): CPU work runs outside it, and a
    waiting timing gets its turn between two GPU operations."""
    wait_loaded()
    case: Case = (task.cases if kind in ("cases", "refill") else task.bench)[index]
    if kind in ("refill", "timed_refill"):
        case = refill_case(case)
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
    with _lock:
        if key in _cache:
            return inputs, _cache[key]
    with gpu_ops_locked(lock, f"check {task.id}"):  # two threads may both: the same value
        want = run_reference(task, inputs, case.torch_seed, device)
    with _lock:
        return inputs, _cache.setdefault(key, want)


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
    ``tests/evaluate/test_reference.py`` checks the structure against the reference's own on
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


def run_reference(
    task: Task, inputs: Inputs, seed: int, device: str, keep_device: bool = False
) -> Any:
    """The reference's outputs on the CPU, or (benchmark sizes, compared on the GPU anyway) left
    where they were computed."""
    args, kwargs = fresh_arguments(inputs)
    torch.manual_seed(seed)
    with torch.no_grad():
        out = task.reference(*args, **kwargs)
    if task.inplace:
        out = (out, tuple(args[i] for i in task.inplace))
    return detached(out) if keep_device else to_cpu(out)


def judge(
    task: Task,
    outputs: dict[tuple[str, int], list[Any]],
    device: str,
    lock: str | None = None,
    spent: dict[str, float] | None = None,
    variants: dict[int, int] | None = None,
) -> float:
    """Raise ``Reject`` unless every case's outputs are acceptable; ``outputs`` holds exactly the
    cases the trusted side expects (``expect``, enforced by the sandbox), by kind and index
    (``timed``: the output of a benchmark case's last timed call, which saw the redrawn
    contents where ``variants`` says 1).  The GPU ``lock`` is taken op by op (``gpuops``) for a
    case's inputs, its reference run and its comparison: the CPU work of a check runs outside
    it, and a waiting timing gets its turn between GPU operations.  Returns the seconds spent
    waiting for it; ``spent`` gets the seconds of each kind of output, waits included."""
    wait_loaded()
    waited = waited_s()
    spent = {} if spent is None else spent
    order = {"cases": 0, "refill": 1, "bench": 2, "timed": 3}
    for kind, index in sorted(outputs, key=lambda k: (order[k[0]], k[1])):
        runs = outputs[(kind, index)]
        case = (task.cases if kind in ("cases", "refill") else task.bench)[index]
        where = f"{kind} {index} ({case.label()})"
        if kind == "refill":
            where += ": same buffers refilled with other inputs"
        kind_here = kind
        if kind == "timed" and (variants or {}).get(index) == 1:
            kind_here = "timed_refill"  # the last timed call saw the redrawn contents
        began = time.monotonic()
        try:
            judge_case(task, kind_here, index, runs, device, lock)
        except Reject as r:
            detail = f"{where}: {r.detail}"
            if kind == "timed" and r.verdict is Verdict.MISMATCH:
                detail += stale_hint(task, kind_here, index, runs, device, lock)
            raise Reject(r.verdict, detail) from None
        finally:
            spent[kind] = spent.get(kind, 0.0) + time.monotonic() - began
    return waited_s() - waited


def stale_hint(
    task: Task, kind: str, index: int, runs: list[Any], device: str, lock: str | None
) -> str:
    """For a final timed call's output that failed its check: whether it is right for the
    other contents its buffers held in the timed calls (a result kept from an earlier call, or
    kbx's own bookkeeping of which contents that call saw gone wrong), said in the verdict's
    detail; the verdict stays, but a stale result can be told apart from a wrong one
    (docs/design/throughput.md, Correctness findings)."""
    other = "timed" if kind == "timed_refill" else "timed_refill"
    try:
        judge_case(task, other, index, runs, device, lock)
    except Reject:
        return ""
    return (
        " (it is right for the other contents these buffers held during the timed calls: "
        "a result kept from an earlier call)"
    )


def judge_case(
    task: Task, kind: str, index: int, runs: list[Any], device: str, lock: str | None = None
) -> None:
    inputs, want = expected(task, kind, index, device, lock)
    if kind in ("cases", "refill") and task.check is not None:
        # Correctness cases are small: their property checks run on CPU copies of the inputs
        # (the outputs and the reference's are on the CPU already), with no GPU hold: on the
        # GPU, op by op under the lock, hundreds of float64 operations spend most of their time
        # making way for timings (docs/design/throughput.md, GPU lock and timing turns).  The
        # CPU runs every check this way.
        with gpu_ops_locked(lock, "check inputs"):
            inputs = on_cpu(inputs)
        verdict_on(task, inputs, want, runs)
        return
    with gpu_ops_locked(lock, f"check {task.id}"):  # benchmark sizes compared on the GPU
        verdict_on(task, inputs, want, runs)


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


def verdict_on(task: Task, inputs: Inputs, want: Any, runs: list[Any]) -> None:
    got = runs[0]
    if not task.random:
        if task.check is not None:
            compare_structure(got, want)
            reason = task.check(inputs, got)
            if reason:
                raise Reject(Verdict.MISMATCH, reason)
            return
        compare(got, want, task.tolerance)
        return
    compare_structure(got, want)
    if len(runs) == 1:  # a timed call: the seed rules were checked on the first calls
        assert task.check is not None
        reason = task.check(inputs, got)
        if reason:
            raise Reject(Verdict.MISMATCH, reason)
        return
    try:
        compare(runs[1], got, EXACT)
    except Reject:
        raise Reject(
            Verdict.MISMATCH,
            "two calls with the same torch seed gave different "
            "outputs: derive the kernel's seed from torch's generator",
        ) from None
    if outputs_equal(runs[2], got):
        raise Reject(Verdict.MISMATCH, "the output does not change with torch's seed")
    assert task.check is not None
    reason = task.check(inputs, got)
    if reason:
        raise Reject(Verdict.MISMATCH, reason)


def compare_structure(got: Any, want: Any) -> None:
    """Shapes and dtypes must match even where values are judged by a property checker (which
    also judges NaN and Inf placement); ``want`` may be meta tensors (``output_structure``)."""
    compare(got, want, EXACT, values=False)


def outputs_equal(a: Any, b: Any) -> bool:
    try:
        compare(a, b, EXACT)
    except Reject:
        return False
    return True
