"""Child-side timing of benchmark cases: rotating input sets, alternating contents, the probe on
new contents, the profiler cross-check.  The parent times its baselines with ``time_case`` too,
so both sides measure alike."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch

from kbx.evaluate import timing as clock
from kbx.evaluate.runner import (
    CANDIDATE_PATH,
    CandidateFailure,
    Plan,
    Sender,
    classify,
    copy_out,
    explain,
    fresh_arguments,
    leaves,
    refill_case,
    restore,
)
from kbx.runtime.gpulock import exclusive
from kbx.task import Case, Inputs, Task


def input_sets(inputs: Inputs) -> list[tuple[Any, dict[str, Any]]]:
    """Copies of a benchmark case's inputs at distinct addresses, enough to exceed twice the L2
    (at least 2, at most 8), so that consecutive timed calls never see warm or repeated buffers."""
    size = sum(t.nbytes for t in leaves(inputs.args) + leaves(list(inputs.kwargs.values())))
    l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    n = 2 if size * 2 > 8 << 30 else max(2, min(8, -(-2 * l2 // max(size, 1))))
    return [fresh_arguments(inputs) for _ in range(n)]


def time_bench(
    task: Task, plan: Plan, entry: Callable[..., Any], channel: Sender, lock: str | None
) -> tuple[list[dict[str, Any]], list[list[Any]], list[int]]:
    """Time every benchmark case; also return the output of each case's last timed call, which
    the parent checks like any other output (a candidate that only computes when watched, or
    that replays stale results, fails there)."""
    timings, outs, variants = [], [], []
    # one turn for all the cases: the GPU is this candidate's meanwhile
    with exclusive(lock, "timing"):
        for i, (case, inputs) in enumerate(plan.bench):
            channel.send("timing", index=i)
            try:
                t, out, variant = time_case(
                    task, case, inputs, entry, plan.bench_refills[i], probe=True
                )
            except BaseException as exc:  # noqa: BLE001
                raise CandidateFailure(classify(exc), explain(exc, Path(CANDIDATE_PATH))) from None
            outs.append(out)
            variants.append(variant)
            extra: dict[str, Any] = {"profiler_ms": PROFILE["ms"]} if PROFILE["on"] else {}
            extra["phases_ms"] = dict(PHASES)
            extra["fresh_ms"] = PROBE["fresh_ms"]
            extra["seen_ms"] = PROBE["seen_ms"]
            timings.append(
                {
                    "median_ms": t.median_ms,
                    "ci_low_ms": t.ci_low_ms,
                    "ci_high_ms": t.ci_high_ms,
                    "min_ms": t.min_ms,
                    "reps": t.reps,
                    **extra,
                }
            )
    # copied out after the timing, chunk by chunk: the copies need not hold up others
    timed_outputs = [[copy_out(out, "timed outputs out")] for out in outs]
    return timings, timed_outputs, variants


PROFILE: dict[str, Any] = {"on": False, "ms": None}  # set by the child for --profile runs
# The fastest call on contents never seen before (``fresh_ms``), and the fastest of the calls on
# seen contents made between them (``seen_ms``), from the last time_case with ``probe``: the
# parent compares the first with the timed median and with the second.
PROBE: dict[str, float | None] = {"fresh_ms": None, "seen_ms": None}
FRESH_CALLS = 2
PROBE_ROUNDS = 3  # rounds of FRESH_CALLS on new contents while the probe still looks like reuse
REUSE_RATIO = 0.5  # timed median under this fraction of the time on new contents: too_fast
REUSE_MIN_MS = 0.015  # ... when calls on new contents take this long (shorter: clock noise)
FRESH_STEP = 2.0**-10  # call k's floating-point inputs are the case's scaled by 1 - k * FRESH_STEP
# Wall time of the last time_case's parts (copies of the inputs, warm-up and repetitions,
# profiler pass, final call), reported with each timing to show where a GPU turn goes.
PHASES: dict[str, float] = {}


def prepare_profiler() -> None:
    """A first profiler session, empty and CPU-only, before the child's first GPU turn: its
    start imports ``torch._inductor`` (``hasattr(torch, "_inductor")`` in torch's
    ``prepare_trace``), and with it ``torch._dynamo``, some 900 modules.  The child no longer
    imports them at setup (``gpuops.LockedOps``), so without this they come in the first
    ``profiler_ms``, inside an exclusive timing turn (seconds, while every other process waits
    for the GPU: docs/design/throughput.md, Imports under dispatch modes)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]):
        pass


def profiler_ms(calls: list[Callable[[], None]], prepare: Callable[[int], None]) -> float:
    """Mean GPU kernel time per call from the torch profiler (CUPTI), to cross-check events."""
    from torch.profiler import ProfilerActivity, profile

    for j in range(len(calls)):
        prepare(j)  # restore/reseed every set first: their copies stay out of the profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for call in calls:
            call()
        torch.cuda.synchronize()
    total_us = 0.0
    for item in prof.key_averages():
        us = getattr(item, "self_device_time_total", None)  # older torch: self_cuda_time_total
        total_us += float(us if us is not None else getattr(item, "self_cuda_time_total", 0.0))
    return total_us / 1000 / len(calls)


def scale_floats(tensors: list[Any], factor: float) -> None:
    """Multiply every floating-point (or complex) tensor in place: new contents with the same
    signs, zeros, order and specials, so the work an honest kernel does is unchanged."""
    for t in tensors:
        if t.is_floating_point() or t.is_complex():
            t.mul_(factor)


def looks_reused(timed_ms: float, fresh_ms: float) -> bool:
    """Whether timed calls on contents the candidate had seen ran far faster than calls on
    contents it had never seen (calls under REUSE_MIN_MS are within clock noise)."""
    return fresh_ms >= REUSE_MIN_MS and timed_ms < REUSE_RATIO * fresh_ms


def fresh_ms(
    inputs: Inputs,
    entry: Callable[..., Any],
    seed: int,
    timed_ms: float,
    seen: tuple[Callable[[], Any], Callable[[int], None]] | None = None,
    buffers: tuple[Any, dict[str, Any]] | None = None,
) -> tuple[float, float | None]:
    """Fastest timed call on contents nobody has seen (call j gets the case's inputs with every
    floating-point tensor scaled by 1 - (j + 1) * FRESH_STEP), in ``buffers`` (the seen calls'
    own, which ``seen``'s prepare must refill) or else in a spare buffer set, and the fastest
    of ``seen``'s calls (one of the timed calls, with its prepare), made one before and one
    after each round's fresh calls.

    FRESH_CALLS calls a round.  A first round that is not far slower than the timed calls is the
    whole probe (``seen`` is not called then, and comes back None: the seen calls would be half the
    probe's calls, and the probe a fifth of a warm run's timing turns; docs/design/throughput.md,
    The reuse probe).  Otherwise, while the round still looks like reuse (``suspect``), another
    round on new contents flanked by seen calls, up to PROBE_ROUNDS more.  A stall of the GPU, or of
    the host, during a round slows the seen calls beside the fresh ones, and one that does not come
    back is left behind by the next round (an honest kernel's probe can read many times its timed
    median; docs/design/throughput.md, The reuse probe); a cache keyed on contents misses every
    fresh call and hits every seen one."""
    args, kwargs = buffers if buffers is not None else fresh_arguments(inputs)
    spare, source = (args, list(kwargs.values())), (inputs.args, list(inputs.kwargs.values()))

    def call() -> None:
        entry(*args, **kwargs)

    def seen_once() -> float:
        return clock.time_fixed(seen[0], seen[1], 1) if seen is not None else math.inf

    def fresh_round(r: int) -> float:
        def fresh(k: int) -> None:
            restore(spare, source)
            scale_floats(leaves(spare), 1.0 - (r * FRESH_CALLS + k + 1) * FRESH_STEP)
            torch.manual_seed(seed)

        return clock.time_fixed(call, fresh, FRESH_CALLS)

    best = fresh_round(0)
    if not looks_reused(timed_ms, best):  # as fast as the timed calls: nothing to tell apart
        return best, None
    seen_best = math.inf
    for r in range(1, PROBE_ROUNDS + 1):
        before = seen_once()
        best = min(best, fresh_round(r))
        seen_best = min(seen_best, before, seen_once())
        if not suspect(timed_ms, best, None if seen is None else seen_best):
            break
    return best, None if seen is None else seen_best


def suspect(timed_ms: float, fresh: float, seen: float | None) -> bool:
    """Whether calls on never-seen contents ran far slower than the timed median and, when
    measured, than the calls on seen contents made beside them (``looks_reused``)."""
    return looks_reused(timed_ms, fresh) and (seen is None or looks_reused(seen, fresh))


def time_case(
    task: Task,
    case: Case,
    inputs: Inputs,
    entry: Callable[..., Any],
    alt: Inputs | None = None,
    probe: bool = False,
    final: bool = True,
    warm_hold: clock.Hold = nullcontext,
    turn: clock.Hold = nullcontext,
) -> tuple[Any, Any, int]:
    """Timing of one benchmark case over rotating input sets, then the output of one more call
    made like the timed ones, and which contents that call saw (0: the case's inputs, 1:
    ``alt``, the case redrawn from another seed).

    With ``alt``, the contents at each address alternate between rotations (copied in untimed),
    and the final call gets the contents its buffers did *not* hold at their first call, so a
    result cached by address is always stale there; the parent re-checks that output.

    With ``probe``, more calls get contents never seen before (the case's, scaled;
    ``fresh_ms``), in the first set's buffers where contents alternate, else in one more set,
    and ``PROBE["fresh_ms"]`` is the fastest: a result cached by contents is reused in the
    timed calls, which repeat contents, but not there (perf.reused).  The profiler pass, if
    on, comes after the probe.
    Without ``final`` (baselines) there is no final call and the output is None.
    ``warm_hold`` and ``turn``: the GPU-lock holds of the warm-up and of the timed calls
    (``timing.time_calls``)."""

    began = time.monotonic()
    sets = input_sets(inputs)
    contents = [inputs] + ([alt] if alt is not None else [])
    seeds = [case.torch_seed, refill_case(case).torch_seed]
    seen = {"calls": 0}
    first: dict[int, int] = {}  # the contents each set held at its first call
    last: dict[str, Any] = {}

    def make(j: int) -> Callable[[], None]:
        args, kwargs = sets[j]

        def call() -> None:
            last["out"] = entry(*args, **kwargs)

        return call

    def load(j: int, v: int) -> None:
        if task.inplace or len(contents) > 1:  # every call starts from untouched contents
            src = contents[v]
            restore((sets[j][0], list(sets[j][1].values())), (src.args, list(src.kwargs.values())))
        first.setdefault(j, v)
        torch.manual_seed(seeds[v])

    def prepare(j: int) -> None:
        load(j, (seen["calls"] // len(sets) + j) % len(contents))
        seen["calls"] += 1

    calls = [make(j) for j in range(len(sets))]
    marks = {"sets": time.monotonic()}
    timing = clock.time_calls(calls, prepare, warm_hold=warm_hold, turn=turn)
    marks["timing"] = time.monotonic()
    PROBE["fresh_ms"] = PROBE["seen_ms"] = None
    last.pop("out", None)  # the probe's outputs reuse its memory, as timed calls did
    if probe:  # beside the fresh calls: the first timed call, on contents it has seen
        seen_call = (lambda: (calls[0](), last.pop("out", None)), lambda k: load(0, 0))
        # With two contents, load() refills set 0 before each seen call, and the fresh calls go
        # in set 0 too: a spare set's new memory runs honest kernels slower than the set the
        # seen calls used (docs/design/throughput.md, The reuse probe).  A cache keyed on
        # addresses hits there, but fails the final call's re-check (contents alternate at
        # every address); with one content only, the spare set is what tells it apart.
        own = sets[0] if len(contents) > 1 else None
        PROBE["fresh_ms"], PROBE["seen_ms"] = fresh_ms(
            inputs, entry, seeds[0], timing.median_ms, seen_call, own
        )
    marks["probe"] = time.monotonic()
    if PROFILE["on"]:  # after the probe: the profiler's session leaves nothing behind it
        PROFILE["ms"] = profiler_ms(calls, prepare)
    marks["profile"] = time.monotonic()
    variant = (first.get(0, 0) + 1) % len(contents)
    if final:  # (a baseline's output is not judged: no call for it)
        load(0, variant)
        calls[0]()
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()  # side streams included
    marks["final"] = time.monotonic()
    PHASES.clear()
    for name, mark in marks.items():
        PHASES[name] = round((mark - began) * 1000, 2)
        began = mark
    out = last["out"] if final else None
    if task.inplace and final:
        out = (out, tuple(sets[0][0][p] for p in task.inplace))
    return timing, out, variant
