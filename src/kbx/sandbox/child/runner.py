"""Child-side stages: the plan of every case's inputs, the timing of the benchmark cases, and
an in-process run of every case for kbx's own tools.

The child plans every case's inputs here (``Plan``) before the candidate is imported, runs the
cases through ``stages`` (frozen code, with its checks) and times the benchmark cases with
``time_bench``.  ``run_cases`` calls a trusted solution on every case in-process, without those
checks (``scripts/dev_check.py``, tests); failures become ``CandidateFailure`` with a verdict and
a one-line detail that names the candidate's file and line.  The trusted parent imports nothing
of this module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol

from kbx.gpu.benchtime import CaseTiming, time_case
from kbx.gpu.clock import DEFAULT_PRECISION, Precision
from kbx.gpu.gpulock import exclusive, shared
from kbx.gpu.placement import Placement
from kbx.sandbox.child.calls import Harness, call, call_on, copies, copy_out
from kbx.sandbox.child.entry import CandidateFailure, failure
from kbx.sandbox.child.launches import LaunchCounter
from kbx.suite.task import Case, Inputs, Task
from kbx.suite.tensors import refill_case, restore, same_layout
from kbx.suite.verdict import Verdict


class Sender(Protocol):
    def send(self, event: str, **fields: Any) -> None: ...


@dataclass
class Plan:
    """Inputs of every case, built before the candidate is imported; for each correctness case
    also a refill: the same case from another seed, written into the first call's buffers for a
    second call (a result cached by input address then comes back stale)."""

    place: Placement  # the device, the GPU lock (None on the CPU), the timing core, timed or not
    cases: list[tuple[Case, Inputs]]
    bench: list[tuple[Case, Inputs]]
    refills: list[Inputs | None]
    bench_refills: list[Inputs | None]
    bench_index: list[int] = dataclasses.field(default_factory=list)  # task.bench index of each
    harness: Harness = nullcontext  # set by the child before the candidate is imported

    @classmethod
    def build(
        cls,
        task: Task,
        place: Placement,
        bench: bool | Sequence[int],
        guard: Callable[[], AbstractContextManager[Any]] = nullcontext,
    ) -> Plan:
        """Benchmark cases are checked too where they are affordable (``bench``: all of them,
        none, or those of these indices); their refills (the contents timed calls alternate
        with) only when they are timed (``place.timed``).  Each input set is built inside its
        own ``guard()`` (in the child, ``gpuops.gpu_ops_locked``: its GPU work under the shared
        GPU lock, its heavy CPU work outside it).  The candidate's calls take the GPU lock
        (``calls``)."""

        def make(case: Case) -> Inputs:
            with guard():
                return task.make_inputs(case, place.device)

        cases = [(c, make(c)) for c in task.cases]
        chosen = bench_indices(task, bench)
        large = [(task.bench[i], make(task.bench[i])) for i in chosen]
        refills = [refill_inputs(c, inputs, make) for c, inputs in cases]
        timed = place.timed
        bench_refills = [refill_inputs(c, inputs, make) if timed else None for c, inputs in large]
        return cls(place, cases, large, refills, bench_refills, chosen)


def bench_indices(task: Task, bench: bool | Sequence[int]) -> list[int]:
    if isinstance(bench, bool):
        return list(range(len(task.bench))) if bench else []
    return [i for i in bench if 0 <= i < len(task.bench)]


def refill_inputs(case: Case, inputs: Inputs, make: Callable[[Case], Inputs]) -> Inputs | None:
    """The case drawn from another seed (by ``make``), if it fits the same buffers (same tensor
    shapes and dtypes, same other arguments); None otherwise."""
    other = make(refill_case(case))
    return other if same_layout(inputs, other) else None


Sink = Callable[[str, int, list[Any]], None]  # kind, index, runs: a case's outputs, as made


def run_cases(
    task: Task,
    plan: Plan,
    entry: Callable[..., Any],
    counter: LaunchCounter,
    channel: Sender,
    sink: Sink | None = None,
    after: Callable[[str, int], None] | None = None,
) -> dict[str, list[Any]]:
    """Every correctness case and each planned benchmark case, with its refill; each case's
    outputs go to ``sink`` as they are made (else they are returned, by kind), and ``after`` is
    told when a case's calls are over.  The GPU lock (``plan.place.lock``) is taken per launch
    and per copy, never across a compile."""
    results: dict[str, list[Any]] = {"cases": [], "bench": [], "refill": []}

    def keep(kind: str, index: int, runs: list[Any]) -> None:
        if sink is not None:
            sink(kind, index, runs)
        else:
            results[kind].append(runs)

    items = [("cases", i, c, x) for i, (c, x) in enumerate(plan.cases)]
    items += [("bench", i, c, x) for i, (c, x) in zip(plan.bench_index, plan.bench, strict=True)]
    for kind, i, case, inputs in items:
        channel.send("case", kind=kind, index=i)
        outs, buffers = call_case(task, plan, entry, counter, kind, i, case, inputs)
        if outs is not None:
            keep(kind, i, outs)
        elif sink is None:
            results[kind].append([])  # [] is not judged
        refill = plan.refills[i] if kind == "cases" else None
        if refill is not None:  # new contents at the same addresses
            keep("refill", i, [call_refilled(task, plan, entry, case, buffers, refill)])
        elif kind == "cases" and sink is None:
            results["refill"].append([])
        if after is not None:
            after(kind, i)
    return results


def call_case(
    task: Task,
    plan: Plan,
    entry: Callable[..., Any],
    counter: LaunchCounter,
    kind: str,
    index: int,
    case: Case,
    inputs: Inputs,
) -> tuple[list[Any] | None, tuple[Any, dict[str, Any]]]:
    """A case's calls (three for a random task: its seed, the same again, another) and the
    buffers of the first; the outputs are None where they are not judged (a timed benchmark
    case is judged on its timed output instead: this first call's output, hundreds of MB, is
    neither copied out nor judged)."""
    before = counter.launches
    seed = case.torch_seed
    args, kwargs = copies(inputs, plan.place.lock, plan.harness)
    keep = kind == "cases" or task.random or not plan.place.timed
    outs = [call_on(task, entry, args, kwargs, seed, plan, keep)]
    if task.random:  # the same seed again must repeat; another must not
        outs += [call(task, entry, inputs, s, plan) for s in (seed, seed + 7919)]
    if counter.required and counter.launches == before:
        raise CandidateFailure(
            Verdict.NO_TRITON, f"{kind} {index} ({case.label()}): no Triton kernel was launched"
        )
    return (outs if keep else None), (args, kwargs)


def call_refilled(
    task: Task,
    plan: Plan,
    entry: Callable[..., Any],
    case: Case,
    buffers: tuple[Any, dict[str, Any]],
    refill: Inputs,
) -> Any:
    """A call on the first call's very ``buffers``, refilled with the case drawn from another
    seed."""
    args, kwargs = buffers
    new = (refill.args, list(refill.kwargs.values()))
    with shared(plan.place.lock, "refill"), plan.harness():
        restore((args, list(kwargs.values())), new)
    seed = refill_case(case).torch_seed
    return call_on(task, entry, args, kwargs, seed, plan)


def time_bench(
    task: Task,
    plan: Plan,
    entry: Callable[..., Any],
    channel: Sender,
    profile: bool = False,
    precision: Precision = DEFAULT_PRECISION,
    timer: Callable[..., tuple[CaseTiming, Any, int]] = time_case,
) -> tuple[list[dict[str, Any]], list[list[Any]], list[int]]:
    """Time every benchmark case (``timer``: ``benchtime.time_case``, bound when this module
    is imported, before the candidate's, where replacing this module's ``time_case`` changes
    nothing, and the guard refuses a change of a kbx function's defaults; with its probe, and
    with the profiler's cross-check where ``profile``); also return the output of each case's
    last timed call, which the parent checks like any other output (a candidate that only
    computes when watched, or that replays stale results, fails there), and which contents it
    saw.  Each case's raw times go to the parent (``samples``), which computes the statistics
    from them."""
    timings, outs, variants = [], [], []
    # one turn for all the cases: the GPU is this candidate's meanwhile
    with exclusive(plan.place.lock, "timing", plan.place.timing_core):
        for i, (case, inputs) in enumerate(plan.bench):
            channel.send("timing", index=i)
            try:
                refill = plan.bench_refills[i]
                t, out, variant = timer(
                    task, case, inputs, entry, refill, True, profile=profile, precision=precision
                )
            except BaseException as exc:  # noqa: BLE001
                raise failure(exc) from None
            if t.samples_ms:
                channel.send("samples", index=i, ms=[float(f"{x:.6g}") for x in t.samples_ms])
            outs.append(out)
            variants.append(variant)
            timings.append(reported(t, profile))
    # copied out after the timing, chunk by chunk: the copies need not hold up others
    timed_outputs = [[copy_out(out, "timed outputs out", plan.place.lock)] for out in outs]
    return timings, timed_outputs, variants


def reported(t: CaseTiming, profile: bool) -> dict[str, Any]:
    """A case's timing as the child reports it (``channel.Timing``)."""
    extra: dict[str, Any] = {"profiler_ms": t.profiler_ms} if profile else {}
    extra["phases_ms"] = dict(t.phases_ms)
    extra["fresh_ms"], extra["seen_ms"] = t.fresh_ms, t.seen_ms
    fields = ("median_ms", "ci_low_ms", "ci_high_ms", "min_ms", "reps")
    return {**{k: getattr(t, k) for k in fields}, **extra}
