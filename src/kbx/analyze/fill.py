"""From a loaded table to the statistics (``compute``: every Table, with n and intervals, for
analysis.json) and from those to the report's ``AnalysisResults`` (``results``).  The schema
is in docs/design/analysis.md."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from kbx.analyze import dynamics, speedups, spread, stats
from kbx.analyze.bootstrap import Estimate
from kbx.analyze.identity import RunIdentity, subtitle
from kbx.analyze.schema import (
    AnalysisResults,
    CategoryCell,
    FastPCurve,
    Interval,
    MethodRates,
    Rescue,
    Round,
)

CURVE_P = [round(0.1 * 1.25**k, 4) for k in range(23)]  # fast_p curve thresholds, 0.1 to ~13


OVER = ("attempted", "suite")  # a rate's denominator: the tasks each run attempted, or the suite


def counting(table: pd.DataFrame, over: str = "attempted") -> pd.DataFrame:
    """The table with ``counted``, the rates' denominator per row: 1 for a task the run attempted
    (``over="attempted"``, kbx.core.passrate's definition) or for every suite task (``"suite"``)."""
    if over not in OVER:
        raise ValueError(f"over {over!r}: want one of {', '.join(OVER)}")
    if over == "suite" or "attempted" not in table:
        return table.assign(counted=1.0)
    return table.assign(counted=table["attempted"].astype(float))


def compute(
    table: pd.DataFrame, resamples: int = 10_000, seed: int = 0, over: str = "attempted"
) -> dict[str, Any]:
    """Every statistic of the table (pydantic models), by name; absent when it does not apply
    (transitions without rounds, hardware on one GPU, deviance with one method).  Rates count
    the tasks ``over`` says (``counting``)."""
    table = counting(table, over)
    rs = stats.resampler(table, resamples, seed)
    out: dict[str, Any] = {
        "rates": stats.rates(stats.final(table), rs, ("method",)),
        "rates_by_round": stats.rates(table, rs, ("method", "round")),
        "category_method": stats.category_method(table, rs),
        "solved": stats.solved(table, rs),
        "quantization": stats.quantization(table, rs),
        "speedups": speedups.aggregates(table, rs),
        "speedups_by_category": speedups.aggregates(table, rs, ("category", "method")),
        "slower_share": speedups.slower_share(table, rs, ("method",)),
        "slower_share_pooled": speedups.slower_share(table, rs),
        "fast_p": speedups.fast_p(table, rs),
        "fast_1_by_category": speedups.fast_p(table, rs, (1.0,), ("category", "method")),
        "fast_p_curve": speedups.fast_p(table, rs, CURVE_P),
        "at_k": speedups.at_k(table, rs, grid=(1.0,)),
        "efficiency": speedups.efficiency(table, rs),
        "efficiency_by_category": speedups.efficiency(table, rs, ("category", "method")),
    }
    if steps := dynamics.transitions(table, rs):
        out["transitions"] = steps
    if table["gpu"].nunique() > 1:
        out["hardware"] = spread.hardware(table, rs)
    if table["method"].nunique() > 1:
        from kbx.analyze.deviance import deviance  # statsmodels: only where it applies

        out["deviance"] = deviance(table, rs)
    return out


def index(table: stats.Table) -> dict[tuple[Any, ...], dict[str, Estimate]]:
    """A Table's rows by their group values, in the order of the group's keys."""
    return {tuple(r.group.values()): r.stats for r in table.rows}


def interval(est: Estimate | None) -> Interval | None:
    """An Estimate as the schema's Interval: clipped to [0, 1], the point inside its bounds
    (a percentile interval need not hold it); None when there is no value."""
    if est is None or not math.isfinite(est.value):
        return None
    value = min(1.0, max(0.0, est.value))
    lo = min(value, est.lo) if math.isfinite(est.lo) else value
    hi = max(value, est.hi) if math.isfinite(est.hi) else value
    return Interval(value=value, lo=max(0.0, lo), hi=min(1.0, hi), n=est.n)


def share(est: Estimate | None) -> float | None:
    """A rate as a share in [0, 1]; None (n/a) where nothing was counted."""
    return None if est is None or not math.isfinite(est.value) else min(1.0, max(0.0, est.value))


def results(
    table: pd.DataFrame, st: dict[str, Any], title: str, runs: list[RunIdentity], over: str
) -> AnalysisResults:
    """The report's shape, filled from ``compute``'s statistics (and the table, for the lists of
    speedups that the box plots draw); methods with no timed candidate have no speedup figures
    (``untimed``), never 0%."""
    methods = sorted(map(str, table["method"].unique()))
    categories = sorted(map(str, table["category"].unique()))
    untimed = sorted(r.label for r in runs if not r.timed)
    slower = index(st["slower_share"])
    timed_methods = [m for m in methods if m not in untimed]
    return AnalysisResults(
        title=title,
        subtitle=subtitle(runs, over),
        runs=[r.line() for r in runs],
        untimed=untimed,
        methods=methods,
        categories=categories,
        rates=method_rates(st, methods, untimed),
        by_category=cells(table, st, categories, methods, untimed),
        speedups=category_speedups(table, categories),
        fast_p={m: curve(table, st, m) for m in timed_methods},
        slower_share={
            m: iv for m in timed_methods if (iv := interval(slower.get((m,), {}).get("slower")))
        },
        rounds=rounds(table, st, methods),
        rescue=rescues(table, methods),
        hardware=hardware(st),
    )


def method_rates(
    st: dict[str, Any], methods: list[str], untimed: list[str]
) -> dict[str, MethodRates]:
    rates, fast = index(st["rates"]), index(st["fast_p"])
    pick = lambda rows, m, k: interval(rows.get((m,), {}).get(k))  # noqa: E731
    return {
        m: MethodRates(
            call=pick(rates, m, "call"),
            exe=pick(rates, m, "exe"),
            fast_1=None if m in untimed else pick(fast, m, "fast_1"),
        )
        for m in methods
    }


def cells(
    table: pd.DataFrame,
    st: dict[str, Any],
    categories: list[str],
    methods: list[str],
    untimed: list[str],
) -> dict[str, dict[str, CategoryCell]]:
    rates, fast = index(st["category_method"]), index(st["fast_1_by_category"])
    speed = index(st["speedups_by_category"])
    out: dict[str, dict[str, CategoryCell]] = {}
    for c in categories:
        out[c] = {}
        for m in methods:
            geo = speed.get((c, m), {}).get("geomean")
            exe = rates.get((c, m), {}).get("exe")
            out[c][m] = CategoryCell(
                tasks=exe.n if exe else 0,
                call_rate=share(rates.get((c, m), {}).get("call")),
                exe_rate=share(exe),
                fast_1_rate=None if m in untimed else share(fast.get((c, m), {}).get("fast_1")),
                geomean_speedup=geo.value if geo and math.isfinite(geo.value) else None,
            )
    return out


def timed(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows with a positive, finite speedup."""
    s = frame["speedup"]
    return frame[frame["perf_ok"] & np.isfinite(s) & (s > 0)]


def category_speedups(table: pd.DataFrame, categories: list[str]) -> dict[str, list[float]]:
    ok = timed(stats.outcomes(table))
    return {c: [float(s) for s in ok.loc[ok["category"] == c, "speedup"]] for c in categories}


def curve(table: pd.DataFrame, st: dict[str, Any], method: str) -> FastPCurve:
    """fast_p of ``method``'s final outcomes at each threshold of CURVE_P, with the intervals of
    ``compute``'s ``fast_p_curve`` where it has them."""
    frame = stats.outcomes(table)
    frame = frame[frame["method"] == method]
    s = timed(frame)["speedup"].to_numpy(float)
    counted = frame[frame["counted"] > 0] if "counted" in frame else frame
    n = max(1, int(counted["task_id"].nunique()))
    shares = [float((s > p).sum()) / n for p in CURVE_P]
    row = index(st["fast_p_curve"]).get((method,), {}) if "fast_p_curve" in st else {}
    ends = [row.get(f"fast_{p:g}") for p in CURVE_P]
    if not all(e is not None and math.isfinite(e.lo) and math.isfinite(e.hi) for e in ends):
        return FastPCurve(p=CURVE_P, share=shares)
    lo = [min(max(e.lo, 0.0), v) for e, v in zip(ends, shares, strict=True) if e]
    hi = [max(min(e.hi, 1.0), v) for e, v in zip(ends, shares, strict=True) if e]
    return FastPCurve(p=CURVE_P, share=shares, lo=lo, hi=hi)


def iterative(table: pd.DataFrame, methods: list[str]) -> list[str]:
    return [m for m in methods if table.loc[table["method"] == m, "round"].nunique() > 1]


def rounds(table: pd.DataFrame, st: dict[str, Any], methods: list[str]) -> dict[str, list[Round]]:
    by_round = index(st["rates_by_round"])
    frame = timed(stats.outcomes(table, rounds="all"))
    out: dict[str, list[Round]] = {}
    for m in iterative(table, methods):
        ours = frame[frame["method"] == m]
        out[m] = []
        for r in sorted(table.loc[table["method"] == m, "round"].unique()):
            s = ours.loc[ours["round"] == r, "speedup"].to_numpy(float)
            row = by_round.get((m, int(r)), {})
            out[m].append(
                Round(
                    round=int(r),
                    call_rate=share(row.get("call")) or 0.0,
                    exe_rate=share(row.get("exe")) or 0.0,
                    mean_speedup=float(np.exp(np.log(s).mean())) if len(s) else None,
                    exe=interval(row.get("exe")),
                )
            )
    return out


def rescues(table: pd.DataFrame, methods: list[str]) -> dict[str, Rescue]:
    """Per iterative method, the final speedups of tasks correct only after its first round
    (rescued) and of those correct from its first round (persistent)."""
    frame = stats.outcomes(table, rounds="all")
    out: dict[str, Rescue] = {}
    for m in iterative(table, methods):
        ours = frame[frame["method"] == m]
        first = ours[ours["round"] == ours["round"].min()].set_index("task_id")["exe_ok"]
        last = timed(ours[ours["round"] == ours["round"].max()])
        was = first.reindex(last["task_id"]).fillna(False).to_numpy(bool)
        s = last["speedup"].to_numpy(float)
        out[m] = Rescue(rescued=[float(x) for x in s[~was]], persistent=[float(x) for x in s[was]])
    return out


def hardware(st: dict[str, Any]) -> dict[str, dict[str, float]]:
    if "hardware" not in st:
        return {}
    out: dict[str, dict[str, float]] = {}
    for (gpu, method), row in index(st["hardware"].per_gpu).items():
        geo = row.get("geomean")
        if geo is not None and math.isfinite(geo.value) and geo.value > 0:
            out.setdefault(str(gpu), {})[str(method)] = geo.value
    return out
