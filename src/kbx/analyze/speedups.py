"""Speedup statistics of methods.md 7.4 (items 7-9): aggregates, the correct-but-slower share,
fast_p, and the unbiased pass@k and fast_p@k estimators."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from kbx.analyze.bootstrap import Estimate, Resampler
from kbx.analyze.stats import (
    FAST_P_GRID,
    Row,
    Spec,
    Table,
    final,
    flags,
    group_rows,
    n_tasks,
    outcomes,
)

AGGREGATE_LABELS = {
    "mean": "arithmetic mean of per-task speedups over perf_ok tasks (the paper's average)",
    "geomean": "geometric mean of per-task speedups over perf_ok tasks (KernelBench)",
    "median": "median of per-task speedups over perf_ok tasks",
    "global": "global ratio: sum of eager ms / sum of kernel ms over perf_ok tasks (released)",
}


def aggregates(
    table: pd.DataFrame, rs: Resampler, by: Sequence[str] = ("method",), gpu: str | None = None
) -> Table:
    """The four speedup aggregates per group of final outcomes, each labelled."""
    return aggregate_frame(flags(outcomes(table, gpu)), rs, by, n_tasks(table), "speedups")


def aggregate_frame(
    frame: pd.DataFrame, rs: Resampler, by: Sequence[str], n: int, name: str
) -> Table:
    specs: dict[str, Spec] = {
        "mean": ("s", "perf", None),
        "geomean": ("log_s", "perf", math.exp),
        "global": ("eager", "kernel", None),
    }
    rows = group_rows(rs, frame, by, specs)
    for row in rows:
        row.stats["median"] = median(rs, frame, row.group)
    return Table(name=name, n=n, labels=AGGREGATE_LABELS, rows=rows)


def median(rs: Resampler, frame: pd.DataFrame, group: dict[str, object]) -> Estimate:
    mask = frame["perf_ok"].to_numpy(bool).copy()
    for key, value in group.items():
        mask &= (frame[key] == value).to_numpy()
    part = frame[mask]
    return rs.quantile(part["speedup"].to_numpy(float), rs.positions(part["task_id"]), 0.5)


def slower_share(
    table: pd.DataFrame, rs: Resampler, by: Sequence[str] = (), gpu: str | None = None
) -> Table:
    """Among final perf_ok kernels, the share slower than eager (speedup < 1)."""
    frame = flags(outcomes(table, gpu))
    rows = group_rows(rs, frame, by, {"slower": ("slower", "perf", None)})
    labels = {"slower": "share of correct, timed kernels with speedup < 1 (n = tasks with one)"}
    return Table(name="slower_share", n=n_tasks(table), labels=labels, rows=rows)


def fast_p(
    table: pd.DataFrame,
    rs: Resampler,
    grid: Sequence[float] = FAST_P_GRID,
    by: Sequence[str] = ("method",),
    gpu: str | None = None,
) -> Table:
    """fast_p = (correct, timed and speedup > p) / suite tasks, for each p of ``grid``."""
    frame = flags(outcomes(table, gpu))
    low = frame["speedup_low"] if "speedup_low" in frame else pd.Series(math.nan, frame.index)
    cols = {f"fast_{p:g}": (frame["perf"] * (frame["speedup"].fillna(0) > p)) for p in grid}
    sure = {f"sure_{p:g}": (frame["perf"] * (low.fillna(0) > p)) for p in grid}
    frame = frame.assign(**cols, **sure)
    rows = group_rows(rs, frame, by, {k: (k, "counted", None) for k in cols | sure})
    labels = {k: f"correct, timed, speedup > {k[5:]} / tasks counted" for k in cols}
    labels |= {
        k: f"correct, timed, faster than {k[5:]}x with 95% confidence (the speedup interval's "
        "low end above it; none where runs have no interval) / tasks counted"
        for k in sure
    }
    return Table(name="fast_p", n=n_tasks(table), labels=labels, rows=rows)


def efficiency(
    table: pd.DataFrame, rs: Resampler, by: Sequence[str] = ("method",), gpu: str | None = None
) -> Table:
    """Hardware efficiency of the final correct, timed kernels with a roofline: the mean SOL
    score and the mean share of the speed of light, each over the tasks that have them."""
    frame = outcomes(table, gpu)
    if "sol_score" not in frame:
        frame = frame.assign(sol_score=math.nan, roofline_share=math.nan)
    has = frame["sol_score"].notna() & frame["roofline_share"].notna() & frame["perf_ok"]
    frame = frame.assign(
        has=has.astype(float),
        sol=frame["sol_score"].where(has, 0.0),
        share=frame["roofline_share"].where(has, 0.0),
    )
    specs: dict[str, Spec] = {
        "sol_score": ("sol", "has", None),
        "sol_share": ("share", "has", None),
    }
    labels = {
        "sol_score": "mean SOL score, 1 / (1 + (T_k - T_SOL) / (T_eager - T_SOL)), T_SOL the "
        "roofline at the peaks of the case's dtype (n = tasks with a timed, correct kernel)",
        "sol_share": "mean share of the speed of light, T_SOL / T_k (same tasks)",
    }
    return Table(
        name="efficiency", n=n_tasks(table), labels=labels, rows=group_rows(rs, frame, by, specs)
    )


def unbiased(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """1 - C(n-c, k) / C(n, k) per task (Chen et al. 2021), as a stable product; 1 if n-c < k."""
    out = np.ones(len(n))
    for i, (ni, ci) in enumerate(zip(n, c, strict=True)):
        if ni - ci >= k:
            out[i] = 1.0 - np.prod(1.0 - k / np.arange(ni - ci + 1, ni + 1))
    return out


def at_k(
    table: pd.DataFrame,
    rs: Resampler,
    ks: Sequence[int] = (1, 5, 10),
    grid: Sequence[float] = (),
    gpu: str | None = None,
) -> Table:
    """pass@k (and fast_p@k for p in ``grid``) per method over the final round's samples; k is
    capped at the samples each method has. n = suite tasks; each task's estimate is averaged."""
    frame = final(table)
    if frame.empty:
        return Table(name="at_k", n=0, labels={}, rows=[])
    first = frame.groupby("method")["gpu"].transform("min") if gpu is None else gpu
    frame = flags(frame[frame["gpu"] == first])  # each method's first GPU, as in outcomes
    hits = {"pass": frame["exe"]} | {
        f"fast_{p:g}": frame["perf"] * (frame["speedup"].fillna(0) > p) for p in grid
    }
    if "counted" not in frame:
        frame = frame.assign(counted=1.0)
    per_task = frame.assign(**hits).groupby(["method", "task_id"])
    counts = per_task[list(hits)].sum().assign(n=per_task.size(), counted=per_task["counted"].max())
    counts = counts.reset_index()
    rows: list[Row] = []
    for method, part in counts.groupby("method"):
        n = part["n"].to_numpy(int)
        cols = {
            f"{h}@{k}": unbiased(n, part[h].to_numpy(int), min(k, int(n.min())))
            for h in hits
            for k in ks
        }
        part = part.assign(**cols)
        specs: dict[str, Spec] = {c: (c, "counted", None) for c in cols}
        rows += [
            Row(group={"method": method}, stats=r.stats) for r in group_rows(rs, part, (), specs)
        ]
    labels = {
        "pass@k": "P(some of k samples is correct), unbiased; k capped at the samples",
        "fast_p@k": "P(some of k samples is correct with speedup > p), unbiased",
    }
    return Table(name="at_k", n=n_tasks(table), labels=labels, rows=rows)
