"""The rate, table, speedup and sampling statistics of methods.md 7.4 (items 1-4 and 7-9), as
pure functions of a loaded table; every one returns a ``Table`` with ``n`` and intervals."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel

from kbx.analyze.bootstrap import Estimate, Resampler

FAST_P_GRID = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
Spec = tuple[str, str, Callable[[float], float] | None]  # numerator, denominator, transform


class Row(BaseModel):
    group: dict[str, Any]
    stats: dict[str, Estimate]


class Table(BaseModel):
    """One statistic's rows; ``n`` = tasks in the suite, ``labels`` says what each column is."""

    name: str
    n: int
    labels: dict[str, str]
    rows: list[Row]

    def row(self, **group: Any) -> Row:
        return next(r for r in self.rows if r.group == group)


def resampler(table: pd.DataFrame, resamples: int = 10_000, seed: int = 0) -> Resampler:
    """The bootstrap over the table's suite (it holds every suite task: ``load.complete``)."""
    suite = table.drop_duplicates("task_id").set_index("task_id")["category"]
    return Resampler(suite, resamples, seed)


def final(table: pd.DataFrame) -> pd.DataFrame:
    """Each method's last round."""
    last = table.groupby("method")["round"].transform("max")
    return table[table["round"] == last]


def outcomes(table: pd.DataFrame, gpu: str | None = None, rounds: str = "final") -> pd.DataFrame:
    """One outcome per (task, method[, round]): the first sample, on ``gpu`` (default: each
    method's first GPU in sort order, so a method run on one GPU only is never dropped), at each
    method's final round (``rounds="all"`` keeps every round)."""
    frame = final(table) if rounds == "final" else table
    if frame.empty:
        return frame
    if gpu is None:
        frame = frame[frame["gpu"] == frame.groupby("method")["gpu"].transform("min")]
    else:
        frame = frame[frame["gpu"] == gpu]
    return frame[frame["sample"] == frame.groupby("method")["sample"].transform("min")]


def group_rows(
    rs: Resampler, frame: pd.DataFrame, by: Sequence[str], specs: dict[str, Spec]
) -> list[Row]:
    """For each spec, sum(numerator) / sum(denominator) per group of ``by``, over tasks; the
    denominator ``counted`` is 1 for each row a rate counts (``kbx.analyze.fill.counting``)."""
    if frame.empty:
        return []
    frame = frame.assign(one=1.0)
    if "counted" not in frame:
        frame = frame.assign(counted=1.0)
    out: dict[Any, dict[str, Estimate]] = {}
    for name, (num, den, transform) in specs.items():
        d = rs.matrix(frame, den, by)
        n = rs.matrix(frame, num, by).reindex(columns=d.columns, fill_value=0.0)
        for key, est in zip(d.columns, rs.ratio(n, d), strict=True):
            out.setdefault(key, {})[name] = apply(est, transform) if transform else est
    return [Row(group=group_of(by, key), stats=stats) for key, stats in out.items()]


def group_of(by: Sequence[str], key: Any) -> dict[str, Any]:
    if not by:
        return {}
    values = key if isinstance(key, tuple) else (key,)
    return {
        b: v.item() if isinstance(v, np.generic) else v for b, v in zip(by, values, strict=True)
    }


def apply(est: Estimate, f: Callable[[float], float]) -> Estimate:
    return est.model_copy(update={"value": f(est.value), "lo": f(est.lo), "hi": f(est.hi)})


def n_tasks(table: pd.DataFrame) -> int:
    return int(table["task_id"].nunique())


def flags(frame: pd.DataFrame) -> pd.DataFrame:
    """Outcomes as floats, and speedup columns that are 0 outside perf_ok rows."""
    perf = frame["perf_ok"].to_numpy(bool)
    s = frame["speedup"].to_numpy(float)
    return frame.assign(
        call=frame["call_ok"].astype(float),
        exe=frame["exe_ok"].astype(float),
        perf=perf.astype(float),
        s=np.where(perf, s, 0.0),
        log_s=np.where(perf, np.log(np.where(perf, s, 1.0)), 0.0),
        slower=(perf & (s < 1)).astype(float),
        eager=np.where(perf, frame["eager_ms"].fillna(0.0), 0.0),
        kernel=np.where(perf, frame["kernel_ms"].fillna(0.0), 0.0),
    )


RATE_LABELS = {
    "call": "compile (call) rate: entry ran / tasks counted (attempted, or the suite)",
    "exe": "correctness (exe) rate: correct / tasks counted (attempted, or the suite)",
    "perf": "perf rate: correct and timed / tasks counted (attempted, or the suite)",
}


def rates(table: pd.DataFrame, rs: Resampler, by: Sequence[str] = ("method", "round")) -> Table:
    """Call, exe and perf rates per group; samples and GPUs are averaged within a task."""
    specs: dict[str, Spec] = {k: (k, "counted", None) for k in RATE_LABELS}
    rows = group_rows(rs, flags(table), by, specs)
    return Table(name="rates", n=n_tasks(table), labels=RATE_LABELS, rows=rows)


def category_method(table: pd.DataFrame, rs: Resampler, gpu: str | None = None) -> Table:
    """Final exe and call successes / tasks per (category, method), and per category pooled
    over methods (group ``method="all"``; its denominator is tasks x methods)."""
    frame = flags(outcomes(table, gpu))
    specs: dict[str, Spec] = {"exe": ("exe", "counted", None), "call": ("call", "counted", None)}
    rows = group_rows(rs, frame, ("category", "method"), specs)
    for row in group_rows(rs, frame, ("category",), specs):
        rows.append(Row(group=row.group | {"method": "all"}, stats=row.stats))
    labels = {k: RATE_LABELS[k] for k in specs}
    return Table(name="category_method", n=n_tasks(table), labels=labels, rows=rows)


def solved(table: pd.DataFrame, rs: Resampler, gpu: str | None = None) -> Table:
    """Per category (and ``category="all"``): the share of tasks no method solves, some method
    solves, and every method solves (final exe outcome)."""
    frame = outcomes(table, gpu)
    if "counted" not in frame:
        frame = frame.assign(counted=1.0)
    groups = frame.groupby(["task_id", "category"])
    per_task = groups["exe_ok"].agg(["any", "all"]).join(groups["counted"].max()).reset_index()
    counted = per_task["counted"].to_numpy(float)  # a task no run attempted is not counted
    per_task = per_task.assign(none=(~per_task["any"]) * counted, all_=per_task["all"] * counted)
    per_task["any"] = per_task["any"].astype(float)
    specs: dict[str, Spec] = {
        k: (c, "counted", None)
        for k, c in (("all_fail", "none"), ("solved_by_any", "any"), ("solved_by_all", "all_"))
    }
    rows = group_rows(rs, per_task, ("category",), specs)
    rows += [
        Row(group={"category": "all"}, stats=r.stats) for r in group_rows(rs, per_task, (), specs)
    ]
    labels = {
        "all_fail": "share of tasks with no correct kernel from any method",
        "solved_by_any": "share of tasks some method solves",
        "solved_by_all": "share of tasks every method solves",
    }
    return Table(name="solved", n=n_tasks(table), labels=labels, rows=rows)


def quantization(table: pd.DataFrame, rs: Resampler, gpu: str | None = None) -> Table:
    """Final correct kernels / (quantization tasks x methods), pooled and per method."""
    frame = flags(outcomes(table, gpu))
    frame = frame[frame["quant"].astype(bool)]
    specs: dict[str, Spec] = {"exe": ("exe", "counted", None), "call": ("call", "counted", None)}
    rows = [Row(group={"method": "all"}, stats=r.stats) for r in group_rows(rs, frame, (), specs)]
    rows += group_rows(rs, frame, ("method",), specs)
    labels = {"exe": "correct / (quantization tasks x methods)", "call": "compiled / same"}
    return Table(name="quantization", n=int(frame["task_id"].nunique()), labels=labels, rows=rows)
