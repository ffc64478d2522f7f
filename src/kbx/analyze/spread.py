"""Cross-hardware spread (methods.md 7.4 item 10): per final kernel correct on two or more GPUs,
R = max / min speedup over GPUs, beside the eager baseline's own max / min time over GPUs."""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel

from kbx.analyze.bootstrap import Estimate, Resampler
from kbx.analyze.speedups import aggregate_frame
from kbx.analyze.stats import Table, final, flags, n_tasks


class Spread(BaseModel):
    label: str
    n: int  # kernels (or tasks, for the baseline) on two or more GPUs
    max: float
    median: Estimate
    p90: Estimate


class Hardware(BaseModel):
    gpus: list[str]
    kernels: Spread  # speedup max / min per (task, method)
    eager: Spread  # eager ms max / min per task: how much of R the baseline alone explains
    per_gpu: Table  # speedup aggregates per (gpu, method)


def spread(rs: Resampler, ratios: pd.Series, label: str) -> Spread:
    """Summary of per-kernel ratios indexed by task_id (repeats allowed)."""
    values = ratios.to_numpy(float)
    where = rs.positions(pd.Series(ratios.index))
    top = float(values.max()) if len(values) else float("nan")
    return Spread(
        label=label,
        n=len(values),
        max=top,
        median=rs.quantile(values, where, 0.5),
        p90=rs.quantile(values, where, 0.9),
    )


def hardware(table: pd.DataFrame, rs: Resampler, eager_ms: pd.DataFrame | None = None) -> Hardware:
    """Spread over the final round's first sample; ``eager_ms`` (task_id x gpu) replaces the
    baseline times the table carries (e.g. the released per-GPU eager timings)."""
    frame = final(table)
    frame = flags(frame[frame["sample"] == frame.groupby("method")["sample"].transform("min")])
    ok = frame[frame["perf_ok"]]
    by_kernel = ok.groupby(["task_id", "method"])["speedup"].agg(["max", "min", "size"])
    by_kernel = by_kernel[by_kernel["size"] >= 2]
    kernels = spread(
        rs,
        (by_kernel["max"] / by_kernel["min"]).droplevel("method"),
        "max / min speedup over GPUs per (task, method)",
    )
    if eager_ms is None:
        eager_ms = ok.groupby(["task_id", "gpu"])["eager_ms"].median().unstack("gpu")
    e = eager_ms[eager_ms.notna().sum(axis=1) >= 2]
    eager = spread(rs, e.max(axis=1) / e.min(axis=1), "max / min eager ms over GPUs per task")
    per_gpu = aggregate_frame(frame, rs, ("gpu", "method"), n_tasks(table), "per_gpu_speedups")
    return Hardware(
        gpus=sorted(map(str, frame["gpu"].unique())), kernels=kernels, eager=eager, per_gpu=per_gpu
    )


def eager_table(
    timings: dict[str, dict[str, list[dict[str, float]]]], suite: pd.Series
) -> pd.DataFrame:
    """The released ``eager_timings_by_gpu.json`` as summed ms per (task_id, gpu); its task keys
    are bare names, matched to the suite's ``Category/name`` ids."""
    by_name = {tid.split("/", 1)[1]: tid for tid in suite.index}
    cells = {
        (by_name[t], gpu): sum(r["ms"] for r in rows)
        for gpu, tasks in timings.items()
        for t, rows in tasks.items()
        if t in by_name
    }
    if not cells:
        return pd.DataFrame(dtype=float)
    return pd.Series(cells).unstack().rename_axis(index="task_id", columns="gpu").astype(np.float64)
