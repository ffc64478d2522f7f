"""Timing of one benchmark case: rotating input sets, alternating contents, the probe on new
contents, the profiler cross-check.  The candidate's child times its benchmark cases with
``time_case`` (``runner.time_bench``) and the parent its baselines, so both sides measure alike;
this module imports nothing of the child's stages.  Everything a timing measured comes back in
its ``CaseTiming``."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import torch

from kbx.gpu import clock
from kbx.suite.task import Case, Inputs, Task
from kbx.suite.tensors import detached, fresh_arguments, leaves, refill_case, restore


@dataclass(frozen=True)
class CaseTiming(clock.Timing):
    """A benchmark case's timing, with what ``time_case`` measured beside it: the fastest call
    on contents never seen before (``fresh_ms``) and the fastest of the calls on seen contents
    made between them (``seen_ms``, None where the probe needed none), which the parent compares
    with the timed median; the profiler's mean kernel time per call (``profiler_ms``, with
    ``profile``); the wall time of its parts (``phases_ms``: copies of the inputs, warm-up and
    repetitions, probe, profiler pass, final call), to show where a GPU turn goes."""

    fresh_ms: float | None = None
    seen_ms: float | None = None
    profiler_ms: float | None = None
    phases_ms: dict[str, float] = field(default_factory=dict)


def input_sets(inputs: Inputs) -> list[tuple[Any, dict[str, Any]]]:
    """Copies of a benchmark case's inputs at distinct addresses, enough to exceed twice the L2
    (at least 2, at most 8), so that consecutive timed calls never see warm or repeated buffers."""
    size = sum(t.nbytes for t in leaves(inputs.args) + leaves(list(inputs.kwargs.values())))
    l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    n = 2 if size * 2 > 8 << 30 else max(2, min(8, -(-2 * l2 // max(size, 1))))
    return [fresh_arguments(inputs) for _ in range(n)]


FRESH_CALLS = 2
PROBE_ROUNDS = 3  # rounds of FRESH_CALLS on new contents while the probe still looks like reuse
REUSE_RATIO = 0.5  # timed median under this fraction of the time on new contents: too_fast
REUSE_MIN_MS = 0.015  # ... when calls on new contents take this long (shorter: clock noise)
FRESH_STEP = 2.0**-10  # call k's floating-point inputs are the case's scaled by 1 - k * FRESH_STEP


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


class Rotation:
    """The calls of one benchmark case over its input sets at distinct addresses: each call's
    buffers get the contents its turn gives (the case's and ``alt``'s alternate between
    rotations, copied in untimed) and the torch seed those contents were drawn with."""

    def __init__(
        self, task: Task, case: Case, inputs: Inputs, entry: Callable[..., Any], alt: Inputs | None
    ) -> None:
        self.task, self.entry = task, entry
        self.sets = input_sets(inputs)
        self.contents = [inputs] + ([alt] if alt is not None else [])
        self.seeds = [case.torch_seed, refill_case(case).torch_seed]
        self.prepared = 0  # calls prepared so far
        self.first: dict[int, int] = {}  # the contents each set held at its first call
        self.out: Any = None  # the last call's output (only the last: the memory is reused)
        self.calls = [self.call_of(j) for j in range(len(self.sets))]

    def call_of(self, j: int) -> Callable[[], None]:
        args, kwargs = self.sets[j]

        def call() -> None:
            self.out = self.entry(*args, **kwargs)

        return call

    def load(self, j: int, v: int) -> None:
        """Set ``j`` gets contents ``v`` (where calls may have changed them) and its seed."""
        if self.task.inplace or len(self.contents) > 1:  # every call starts from untouched ones
            src, (args, kwargs) = self.contents[v], self.sets[j]
            restore((args, list(kwargs.values())), (src.args, list(src.kwargs.values())))
        self.first.setdefault(j, v)
        torch.manual_seed(self.seeds[v])

    def prepare(self, j: int) -> None:
        """Before the next call, on set ``j``: the contents of its turn."""
        self.load(j, (self.prepared // len(self.sets) + j) % len(self.contents))
        self.prepared += 1

    def probe(self, inputs: Inputs, timed_ms: float) -> tuple[float, float | None]:
        """``fresh_ms`` beside the first timed call, on contents it has seen.  With two contents
        ``load`` refills set 0 before each seen call, and the fresh calls go in set 0 too: a
        spare set's new memory runs honest kernels slower than the set the seen calls used
        (docs/design/throughput.md, The reuse probe).  A cache keyed on addresses hits there,
        but fails the final call's re-check (contents alternate at every address); with one
        content only, the spare set is what tells it apart."""

        def seen() -> None:
            self.calls[0]()
            self.out = None

        own = self.sets[0] if len(self.contents) > 1 else None
        return fresh_ms(inputs, self.entry, self.seeds[0], timed_ms, (seen, self.seen_load), own)

    def seen_load(self, k: int) -> None:
        self.load(0, 0)

    def final(self, variant: int) -> Any:
        """One more call made like the timed ones, on set 0 with contents ``variant``: its
        output as it is once the GPU has done the work queued by the time the call returned
        (on every stream), copied there and then (``snapshot``).  Work the call left for later,
        a thread that launches it after kbx's clock stopped, or a later call that finishes it,
        is missing from what the parent checks: each timed call's own output must be done
        within its own timed window."""
        self.load(0, variant)
        self.calls[0]()
        cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
        if cuda:
            torch.cuda.synchronize()  # side streams included
        out = self.out
        if self.task.inplace:
            out = (out, tuple(self.sets[0][0][p] for p in self.task.inplace))
        out = snapshot(out)
        if cuda:
            torch.cuda.synchronize()
        return out


def snapshot(x: Any) -> Any:
    """Copies of the plain tensors in ``x`` as they are now (through ``detached``: a tensor
    subclass or another object becomes its placeholder, without running its code)."""
    x = detached(x)
    if isinstance(x, torch.Tensor):
        return torch.Tensor.clone(x)
    if isinstance(x, tuple):
        return tuple(snapshot(v) for v in x)
    return x


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
    profile: bool = False,
    precision: clock.Precision = clock.DEFAULT_PRECISION,
) -> tuple[CaseTiming, Any, int]:
    """Timing of one benchmark case over rotating input sets, then the output of one more call
    made like the timed ones, and which contents that call saw (0: the case's inputs, 1:
    ``alt``, the case redrawn from another seed).

    With ``alt``, the contents at each address alternate between rotations (copied in untimed),
    and the final call gets the contents its buffers did *not* hold at their first call, so a
    result cached by address is always stale there; the parent re-checks that output.

    With ``probe``, more calls get contents never seen before (the case's, scaled;
    ``fresh_ms``), in the first set's buffers where contents alternate, else in one more set,
    and the timing's ``fresh_ms`` is the fastest: a result cached by contents is reused in the
    timed calls, which repeat contents, but not there (``timing.reused``).  The profiler pass
    (``profile``) comes after the probe: its session leaves nothing behind it.
    Without ``final`` (baselines) there is no final call and the output is None.
    ``warm_hold`` and ``turn``: the GPU-lock holds of the warm-up and of the timed calls
    (``clock.time_calls``)."""
    marks = {"began": time.monotonic()}
    rotation = Rotation(task, case, inputs, entry, alt)
    marks["sets"] = time.monotonic()
    timing = clock.time_calls(
        rotation.calls, rotation.prepare, precision.budget_ms, warm_hold, turn, precision.rel_ci
    )
    marks["timing"] = time.monotonic()
    rotation.out = None  # the probe's outputs reuse its memory, as timed calls did
    fresh, seen = rotation.probe(inputs, timing.median_ms) if probe else (None, None)
    marks["probe"] = time.monotonic()
    profiled = profiler_ms(rotation.calls, rotation.prepare) if profile else None
    marks["profile"] = time.monotonic()
    variant = (rotation.first.get(0, 0) + 1) % len(rotation.contents)
    out = rotation.final(variant) if final else None  # (a baseline's output is not judged)
    marks["final"] = time.monotonic()
    measured = CaseTiming(
        **vars(timing),
        fresh_ms=fresh,
        seen_ms=seen,
        profiler_ms=profiled,
        phases_ms=phases(marks),
    )
    return measured, out, variant


def phases(marks: dict[str, float]) -> dict[str, float]:
    """Milliseconds from each mark to the next, named by the later one."""
    names, times = list(marks), list(marks.values())
    return {names[i]: round((times[i] - times[i - 1]) * 1000, 2) for i in range(1, len(times))}
