"""A loaded table as the released KernelBench-X harness's output, ``<gpu>/<method>/metrics.json``
and ``summary.json`` (format: the released harness; kbx.analyze.load reads it back), so tooling
built for that harness reads kbx results.  Only what the table holds is filled: ``code``,
``dtype`` and per-size ``performance`` rows are left empty, ``error`` is the kbx verdict."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from kbx.analyze import load, stats


def slug(name: str) -> str:
    """A folder name from a GPU or method name (``NVIDIA H200`` -> ``NVIDIA_H200``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "unknown"


def na(x: float) -> float | str:
    return round(float(x), 6) if math.isfinite(x) else "N/A"


def metric(row: pd.Series) -> dict[str, Any]:
    perf = bool(row["perf_ok"])
    return {
        "file": f"{row['task_id']}.py",
        "call_ok": bool(row["call_ok"]),
        "exe_ok": bool(row["exe_ok"]),
        "perf_ok": perf,
        "dtype": "",
        "runtime_ms": na(row["kernel_ms"]) if perf else "N/A",
        "gbs": na(row["gbs"]) if perf else "N/A",
        "tflops": na(row["tflops"]) if perf else "N/A",
        "speedup": na(row["speedup"]) if perf else "N/A",
        "maintainability": "N/A",
        "code_quality": {},
        "performance": [],
        "error": "" if row["verdict"] == "passed" else str(row["verdict"]),
        "code": "",
    }


def summary(method: str, frame: pd.DataFrame, suite_tasks: int) -> dict[str, Any]:
    """Rates over files submitted (``total``), as the released harness computes them;
    ``suite_tasks`` is added so the suite-wide rate can be had too."""
    total = len(frame)
    ok = frame[frame["perf_ok"]]
    rate = lambda k: round(100 * k / total, 1) if total else 0.0  # noqa: E731
    kernel = ok["kernel_ms"].sum()
    glob = round(float(ok["eager_ms"].sum() / kernel), 3) if len(ok) and kernel > 0 else 0.0
    passes = {k: int(frame[f"{k}_ok"].sum()) for k in ("call", "exe", "perf")}
    return {
        "method": method,
        "total": total,
        **{f"{k}_pass": v for k, v in passes.items()},
        **{f"{k}_rate": rate(v) for k, v in passes.items()},
        "avg_speedup": glob,
        "avg_speedup_global": glob,
        "avg_speedup_per_task": round(float(ok["speedup"].mean()), 3) if len(ok) else 0.0,
        "suite_tasks": suite_tasks,
    }


def kernelbenchx(table: pd.DataFrame, out: Path) -> list[Path]:
    """Writes each (gpu, method)'s final outcomes (first sample) under ``out``; rows the run
    lacked (verdict ``missing``) are left out, as the released harness never saw them."""
    written = []
    n = int(table["task_id"].nunique())
    for gpu in sorted(table["gpu"].unique()):
        frame = stats.outcomes(table, gpu)
        frame = frame[frame["verdict"] != load.MISSING]
        for method, part in frame.groupby("method"):
            folder = out / slug(str(gpu)) / slug(str(method))
            folder.mkdir(parents=True, exist_ok=True)
            metrics = {f"{r['task_id']}.py": metric(r) for _, r in part.iterrows()}
            (folder / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
            (folder / "summary.json").write_text(
                json.dumps(summary(str(method), part, n), indent=1) + "\n"
            )
            written.append(folder)
    return written
