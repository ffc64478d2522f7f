"""Trusted side: the verdict on a candidate's outputs against the reference's (parent only).

This module never imports candidate code.  The reference outputs come from a ``References``
(``kbx.evaluate.references``): the process's, so that correctness cases are computed once per
task and device for the life of the run.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from kbx.evaluate.references import References, on_cpu
from kbx.gpu.gpulock import waited_s
from kbx.gpu.gpuops import gpu_ops_locked, wait_loaded
from kbx.gpu.placement import CPU, Placement
from kbx.suite.compare import OneStep, as_tensors, compare
from kbx.suite.task import Inputs, Task, Tolerance
from kbx.suite.tensors import leaves
from kbx.suite.verdict import Reject, Verdict

EXACT = Tolerance(rtol=0.0, atol=0.0)
# A random task's outputs under another torch seed: at least this share of their elements must
# change (the reference solutions' correctness cases change 3.3% at the least, a hardshrink's
# zeros, most of them 10-100%): a stream that ignores the seed but in a few elements is the
# same "random" output whatever the seed (tests/exploits/seed_tweak_stream)
MIN_SEED_CHANGE = 0.01


def judge(
    task: Task,
    outputs: dict[tuple[str, int], list[Any]],
    place: Placement = CPU,
    spent: dict[str, float] | None = None,
    variants: dict[int, int] | None = None,
    refs: References | None = None,
) -> float:
    """Raise ``Reject`` unless every case's outputs are acceptable; ``outputs`` holds exactly the
    cases the trusted side expects (``expect``, enforced by the sandbox), by kind and index
    (``timed``: the output of a benchmark case's last timed call, which saw the redrawn
    contents where ``variants`` says 1).  The job's GPU lock is taken op by op (``gpuops``) for a
    case's inputs, its reference run and its comparison: the CPU work of a check runs outside
    it, and a waiting timing gets its turn between GPU operations.  Returns the seconds spent
    waiting for it; ``spent`` gets the seconds of each kind of output, waits included, and of
    those the seconds spent on the reference's inputs and outputs (``reference``: computed, or
    waited for where ``refs`` computes them ahead).  ``refs``: the process's reference outputs
    (None: computed for this call alone)."""
    refs = References() if refs is None else refs
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
            judge_case(task, kind_here, index, runs, place, refs, spent)
        except Reject as r:
            detail = f"{where}: {r.detail}"
            if kind == "timed" and r.verdict is Verdict.MISMATCH:
                detail += stale_hint(task, kind_here, index, runs, place, refs)
            raise Reject(r.verdict, detail) from None
        finally:
            spent[kind] = spent.get(kind, 0.0) + time.monotonic() - began
    return waited_s() - waited


def stale_hint(
    task: Task,
    kind: str,
    index: int,
    runs: list[Any],
    place: Placement,
    refs: References,
) -> str:
    """For a final timed call's output that failed its check: whether it is right for the
    other contents its buffers held in the timed calls (a result kept from an earlier call, or
    kbx's own bookkeeping of which contents that call saw gone wrong), said in the verdict's
    detail; the verdict stays, but a stale result can be told apart from a wrong one
    (docs/design/throughput.md, Correctness findings)."""
    other = "timed" if kind == "timed_refill" else "timed_refill"
    try:
        judge_case(task, other, index, runs, place, refs)
    except Reject:
        return ""
    return (
        " (it is right for the other contents these buffers held during the timed calls: "
        "a result kept from an earlier call)"
    )


def judge_case(
    task: Task,
    kind: str,
    index: int,
    runs: list[Any],
    place: Placement = CPU,
    refs: References | None = None,
    spent: dict[str, float] | None = None,
) -> None:
    began = time.monotonic()
    inputs, want = (References() if refs is None else refs).expected(task, kind, index, place)
    if spent is not None:
        spent["reference"] = spent.get("reference", 0.0) + time.monotonic() - began
    lock = place.lock
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


def verdict_on(task: Task, inputs: Inputs, want: Any, runs: list[Any]) -> None:
    """Raise ``Reject`` unless ``runs`` are right; whatever the candidate returned, nothing else
    is raised: an exception of the comparison or of the task's check on these outputs is the
    outputs' ``mismatch``, naming it (kbx's own memory running out stays kbx's fault)."""
    try:
        judge_runs(task, inputs, want, runs)
    except (Reject, MemoryError, torch.OutOfMemoryError):
        raise
    except Exception as exc:  # noqa: BLE001 - the outputs made kbx's trusted check raise
        what = one_line(f"{type(exc).__name__}: {exc}")
        raise Reject(Verdict.MISMATCH, f"the check cannot judge these outputs ({what})") from None


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def judge_runs(task: Task, inputs: Inputs, want: Any, runs: list[Any]) -> None:
    got = runs[0]
    if not task.random:
        if task.check is not None:
            compare_structure(got, want)
            check_property(task, inputs, got)
            return
        compare(got, want, task.tolerance, step=one_step(task, inputs))
        return
    compare_structure(got, want)
    if len(runs) == 1:  # a timed call: the seed rules were checked on the first calls
        check_property(task, inputs, got)
        return
    try:
        compare(runs[1], got, EXACT)
    except Reject:
        raise Reject(
            Verdict.MISMATCH,
            "two calls with the same torch seed gave different "
            "outputs: derive the kernel's seed from torch's generator",
        ) from None
    changed = seed_change(runs[2], got)
    if changed == 0.0:
        raise Reject(Verdict.MISMATCH, "the output does not change with torch's seed")
    if changed < MIN_SEED_CHANGE:
        raise Reject(
            Verdict.MISMATCH,
            f"only {changed:.2%} of the output's elements change with torch's seed (at least "
            f"{MIN_SEED_CHANGE:.0%}): the kernel's random stream must be keyed by the seed",
        )
    check_property(task, inputs, got)


def check_property(task: Task, inputs: Inputs, got: Any) -> None:
    """The task's own check, on outputs whose structure, shapes and dtypes are right: Python
    scalars in them are made the 0-d tensors they stood for (a task's check may call tensor
    methods on them)."""
    assert task.check is not None
    reason = task.check(inputs, as_tensors(got))
    if reason:
        raise Reject(Verdict.MISMATCH, reason)


def one_step(task: Task, inputs: Inputs) -> OneStep | None:
    """The case's allowance at a quantization boundary (``Task.quant``), or None: its step is
    computed from the inputs (on their device) only when some element is outside the tolerance."""
    quant = task.quant
    if quant is None:
        return None
    return OneStep(lambda: quant.size(inputs), quant.share)


def compare_structure(got: Any, want: Any) -> None:
    """Shapes and dtypes must match even where values are judged by a property checker (which
    also judges NaN and Inf placement); ``want`` may be meta tensors (``output_structure``)."""
    compare(got, want, EXACT, values=False)


def seed_change(other: Any, got: Any) -> float:
    """The share of ``got``'s tensor elements that differ in ``other`` (NaN equals NaN); 1.0
    where their structure, shapes or dtypes differ; for outputs with no elements, 0.0 or 1.0 as
    they are equal or not."""
    try:
        compare(other, got, EXACT, values=False)
    except Reject:
        return 1.0
    pairs = list(zip(leaves(as_tensors(other)), leaves(as_tensors(got)), strict=True))
    total = sum(g.numel() for _, g in pairs)
    if total == 0:
        return 0.0 if outputs_equal(other, got) else 1.0
    differ = 0
    for o, g in pairs:
        bad = o != g
        if g.is_floating_point() or g.is_complex():
            bad &= ~(torch.isnan(o) & torch.isnan(g))
        differ += int(bad.sum())
    return differ / total


def outputs_equal(a: Any, b: Any) -> bool:
    try:
        compare(a, b, EXACT)
    except Reject:
        return False
    return True
