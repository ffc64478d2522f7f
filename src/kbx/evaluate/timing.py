"""The timing stage: a correct candidate's benchmark timings against its task's baselines.

The candidate's cases are timed in its child (``benchtime.time_bench``); what the child reports is
untrusted, so it is validated here before it counts.  Each case gets its baselines' medians
(``Baselines``), a roofline floor from this GPU's measured peaks (a time below it is
``too_fast``, as is one that only repeated contents could explain), and the task a geometric
mean of its cases' speedups, vs eager and vs torch.compile (docs/design/timing.md).
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from kbx.core.config import EvalConfig
from kbx.core.result import CaseTiming, Result, geometric_mean
from kbx.evaluate.baselines import KINDS, Baselines, Measured, open_baselines
from kbx.gpu.benchtime import suspect
from kbx.gpu.gpulock import waited_s
from kbx.gpu.hardware import Peaks
from kbx.gpu.placement import Placement
from kbx.suite.task import Task
from kbx.suite.verdict import Reject, Verdict

FLOOR_SLACK = 1.25  # a case faster than floor / FLOOR_SLACK is too_fast (see roofline)


def prefetch(task: Task, cfg: EvalConfig, place: Placement) -> Future[None] | None:
    """A timed task's baselines, looked up or measured in the background while its candidate
    runs (``Baselines.prefetch``); nothing when the run times nothing."""
    if not place.timed:
        return None
    baselines = open_baselines(cfg.baseline_cache)
    return baselines.prefetch(task, cfg.kinds, place)


def against_baselines(
    task: Task,
    timings: list[dict[str, Any]],
    place: Placement,
    cfg: EvalConfig,
    result: Result,
) -> None:
    """The stage: ``result`` gets its cases' timings, its speedups, and the time this thread
    queued for the GPU lock meanwhile (``baselines_wait``)."""
    baselines = open_baselines(cfg.baseline_cache)
    queued = waited_s()
    limits = baselines.peaks(place)
    result.cases, result.speedup, result.speedup_compile = speedups(
        task, timings, baselines, place, cfg.kinds, limits
    )
    result.speedup_ci = speedup_ci(result.cases)
    result.stage_s["baselines_wait"] = round(waited_s() - queued, 3)
    result.detail += f"; {result.speedup:.3g}x vs eager"


def speedup_ci(cases: list[CaseTiming]) -> list[float] | None:
    """The geometric-mean speedup's interval: the geometric means of the cases' lower and of
    their upper ends (each case at once at its worst, or at its best: wider than the interval of
    the mean, never narrower)."""
    ends = [c.speedup_ci for c in cases]
    if not ends or any(e is None for e in ends):
        return None
    return [geometric_mean([e[0] for e in ends if e]), geometric_mean([e[1] for e in ends if e])]


def speedups(
    task: Task,
    timings: list[dict[str, Any]],
    baselines: Baselines,
    place: Placement,
    kinds: tuple[str, ...] = KINDS,
    limits: Peaks | None = None,
) -> tuple[list[CaseTiming], float, float | None]:
    """Per-case timings against the baselines and geometric-mean speedups (vs eager, vs
    torch.compile when it works on every case); every case must count.  No ``limits``: no
    roofline."""
    if len(timings) != len(task.bench):
        raise Reject(Verdict.CRASHED, f"timed {len(timings)} of {len(task.bench)} benchmark cases")
    base = baselines.ms(task, kinds, place)
    cases = [case_timing(task, i, t, base, limits) for i, t in enumerate(timings)]
    for case in cases:
        case.eager_ci_ms = baselines.interval(task, case.index)
    vs_compile = None
    if all(c.compile_ms for c in cases):
        vs_compile = geometric_mean([c.compile_ms / c.kernel_ms for c in cases])  # type: ignore[operator]
    return cases, geometric_mean([c.speedup for c in cases]), vs_compile


def case_timing(
    task: Task,
    index: int,
    t: dict[str, Any],
    base: Measured,
    limits: Peaks | None,
) -> CaseTiming:
    """One case's report from the child, checked (``forbidden``, ``crashed``, ``too_fast``),
    beside its baselines (``base``)."""
    if not well_formed(t):  # only candidate code in the child could have written this
        raise Reject(Verdict.FORBIDDEN, f"bench {index}: malformed timing report {str(t)[:80]}")
    kernel_ms = float(t.get("median_ms", 0.0))
    if not kernel_ms > 0:
        raise Reject(Verdict.CRASHED, f"bench {index}: no valid timing")
    eager_ms, compile_ms = base[(index, "eager")], base.get((index, "compile"))
    assert eager_ms is not None  # a failed eager baseline raises in its worker instead
    seen = t.get("seen_ms")
    seen_ms = float(seen) if isinstance(seen, int | float) else None
    reused(task, index, kernel_ms, float(t["fresh_ms"]), seen_ms)
    extra: dict[str, Any] = roofline(task, index, kernel_ms, limits) if limits else {}
    extra["fresh_ms"], extra["seen_ms"] = float(t["fresh_ms"]), seen_ms
    if t.get("profiler_ms") is not None:
        extra["profiler_ms"] = float(t["profiler_ms"])
    phases = t.get("phases_ms")  # the child's claim, kept for diagnosis only
    if isinstance(phases, dict) and all(isinstance(v, int | float) for v in phases.values()):
        extra["phases_ms"] = {str(k): float(v) for k, v in list(phases.items())[:8]}
    low, high = t.get("ci_low_ms"), t.get("ci_high_ms")
    if isinstance(low, int | float) and isinstance(high, int | float) and 0 < low <= high:
        extra["kernel_ci_ms"] = [float(low), float(high)]
    label = task.bench[index].label()
    reps = int(t.get("reps", 0))
    return CaseTiming(index, label, kernel_ms, eager_ms, reps, compile_ms=compile_ms, **extra)


def well_formed(t: Any) -> bool:
    """A timing report of the shape the child writes: numbers (or nothing) where numbers go."""
    return (
        isinstance(t, dict)
        and all(
            t.get(k) is None or isinstance(t[k], int | float)
            for k in ("median_ms", "reps", "profiler_ms")
        )
        and isinstance(t.get("fresh_ms"), int | float)
    )


def roofline(task: Task, index: int, kernel_ms: float, limits: Peaks) -> dict[str, float]:
    """Achieved throughput of a case, and ``too_fast`` below the physical floor: the task's
    declared bytes (a lower bound of what an honest kernel moves, audited by
    ``kbx.audit.traffic``) at the GPU's data-sheet bandwidth, or its FLOPs at its best data-sheet
    peak (``Peaks.limits``; docs/design/timing.md, Roofline).  FLOOR_SLACK keeps a margin for a
    sheet that rounds down; a cheat that skips its work lands many times below the floor."""
    case = task.bench[index]
    flops, moved = task.flops(case), task.bytes_moved(case)
    floor = limits.floor_ms(moved, flops)
    if kernel_ms < floor / FLOOR_SLACK:
        peak = limits.limits
        raise Reject(
            Verdict.TOO_FAST,
            f"bench {index} ({case.label()}): {kernel_ms:.4g} ms is below this GPU's floor "
            f"of {floor:.4g} ms for {moved:.3g} B at {peak.bandwidth_gbs:.0f} GB/s and "
            f"{flops:.3g} FLOP at {peak.tflops:.0f} TFLOP/s ({peak.basis}): not a real speedup",
        )
    return {
        "floor_ms": floor,
        "achieved_gbs": moved / (kernel_ms * 1e-3) / 1e9,
        "achieved_tflops": flops / (kernel_ms * 1e-3) / 1e12,
        **limits.efficiency(moved, flops, case.dtype, kernel_ms),
    }


def reused(
    task: Task, index: int, kernel_ms: float, fresh_ms: float, seen_ms: float | None = None
) -> None:
    """``too_fast`` when the timed calls, which repeat contents the candidate has seen, ran far
    faster than calls on contents it had never seen (``benchtime.time_case``'s probe), and so
    did the calls on seen contents made beside those (``seen_ms``, when reported: a stall that
    slowed the probe slows them too): an honest kernel does the same work on both, a result
    cache keyed on contents does not."""
    if suspect(kernel_ms, fresh_ms, seen_ms):
        raise Reject(
            Verdict.TOO_FAST,
            f"bench {index} ({task.bench[index].label()}): {kernel_ms:.4g} ms on inputs it had "
            f"seen before, {fresh_ms:.4g} ms on new ones: results reused, not computed",
        )
