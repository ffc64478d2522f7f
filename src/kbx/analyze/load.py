"""Result tables for analysis: kbx run folders and KernelBench-X metrics folders, one row per
(task, run, model, round, sample, gpu), completed over the full suite (rows a run lacks are
``missing``: not attempted).  A run is labelled by its method and model (``label``) or by the
name given for its input; two inputs with one label are pooled only when asked (``Clash``)."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

TASKS_DIR = Path(__file__).parent.parent / "tasks"
KEYS = ["task_id", "method", "model", "round", "sample", "gpu"]
QUANT_NAME = re.compile(r"int8|int4|fp8|w\d+a\d+|quant")
MISSING = "missing"  # the verdict of a row the run did not produce


def suite_tasks(tasks_dir: Path = TASKS_DIR) -> pd.Series:
    """task_id -> category for every task file (no imports: analysis needs no torch)."""
    ids = sorted(f"{p.parent.name}/{p.stem}" for p in tasks_dir.glob("*/*.py"))
    return pd.Series([i.split("/")[0] for i in ids], index=pd.Index(ids, name="task_id"))


class Clash(ValueError):
    """Two inputs whose runs share a label, not to be merged unasked: the message names them."""


def load(
    paths: Iterable[Path],
    suite: pd.Series | None = None,
    names: Sequence[str] = (),
    pool: bool = False,
) -> pd.DataFrame:
    """Every kbx run folder (``results.jsonl``) and KernelBench-X metrics folder in ``paths``;
    the i-th of ``names``, where given, labels the i-th path's rows; ``pool``: inputs sharing a
    label on one GPU are one run (else ``Clash``; on several GPUs they are the hardware spread)."""
    rows: list[dict[str, Any]] = []
    first: dict[tuple[str, str], Path] = {}  # (label, gpu) -> the input it was first seen in
    for i, path in enumerate(map(Path, paths)):
        if (path / "results.jsonl").exists() or path.name == "results.jsonl":
            got = kbx_rows(path)
        else:
            got = kbx_tree_rows(path)
        name = names[i] if i < len(names) else None
        got = [dict(row, method=name or label(row), input=str(path)) for row in got]
        for key in sorted({(row["method"], row["gpu"]) for row in got}):
            if key in first and not pool:
                raise Clash(
                    f"{first[key]} and {path} are both runs of {key[0]!r} on {key[1]}: give each "
                    "a --name to compare them, or --pool to count them as one run"
                )
            first.setdefault(key, path)
        rows += got
    return complete(pd.DataFrame(rows), suite_tasks() if suite is None else suite)


def label(row: Mapping[str, Any]) -> str:
    """A run's label: its method, and its model where the records name one."""
    method, model = str(row["method_name"]), str(row["model"])
    return f"{method} · {model}" if model and model != method else method


def kbx_rows(path: Path) -> list[dict[str, Any]]:
    """One row per record of a kbx run's ``results.jsonl``; method defaults to the folder."""
    file = path if path.name == "results.jsonl" else path / "results.jsonl"
    lines = [line for line in file.read_text().splitlines() if line.strip()]
    return [record_row(json.loads(line), file.parent.name) for line in lines]


def record_row(rec: Mapping[str, Any], folder: str) -> dict[str, Any]:
    meta = rec.get("meta") or {}
    pick = lambda k: rec.get(k) if rec.get(k) is not None else meta.get(k)  # noqa: E731
    cases = rec.get("cases") or []
    speedup = rec.get("speedup")
    perf_ok = rec.get("verdict") == "passed" and speedup is not None and math.isfinite(speedup)
    fingerprint = rec.get("fingerprint") or {}
    started = rec.get("started_at")
    return {
        "task_id": rec["task_id"],
        "method_name": str(pick("method") or folder),
        "model": str(pick("model") or ""),
        "round": int(pick("round") or 0),
        "sample": int(pick("sample") or 0),
        "gpu": str((rec.get("fingerprint") or {}).get("gpu") or rec.get("device") or "unknown"),
        "verdict": str(rec.get("verdict")),
        "call_ok": bool(rec.get("ran")),
        "exe_ok": bool(rec.get("correct")),
        "perf_ok": perf_ok,
        "speedup": float(speedup) if perf_ok and speedup is not None else math.nan,
        "speedup_low": interval_end(rec, 0) if perf_ok else math.nan,
        "speedup_high": interval_end(rec, 1) if perf_ok else math.nan,
        "kernel_ms": sum(c["kernel_ms"] for c in cases) if perf_ok and cases else math.nan,
        "eager_ms": sum(c["eager_ms"] for c in cases) if perf_ok and cases else math.nan,
        "gbs": max((c.get("achieved_gbs") or 0.0 for c in cases), default=math.nan),
        "tflops": max((c.get("achieved_tflops") or 0.0 for c in cases), default=math.nan),
        "sol_score": case_mean(cases, sol) if perf_ok else math.nan,
        "roofline_share": case_mean(cases, roofline_share) if perf_ok else math.nan,
        "device": str(rec.get("device") or fingerprint.get("device") or ""),
        "kbx": str(fingerprint.get("kbx") or ""),
        "date": day(started) if isinstance(started, int | float) else "",
    }


def day(epoch_s: float) -> str:
    """The UTC date of a time stamp, as 2026-12-04."""
    return time.strftime("%Y-%m-%d", time.gmtime(epoch_s))


def sol(case: Mapping[str, Any]) -> float | None:
    """A case's SOL score (SOL-ExecBench's, against the roofline of its dtype), as recorded."""
    value = case.get("sol_score")
    return float(value) if isinstance(value, int | float) else None


def roofline_share(case: Mapping[str, Any]) -> float | None:
    """The share of the speed of light a case reached: its dtype's roofline over its time."""
    floor, kernel = case.get("dtype_floor_ms"), case.get("kernel_ms")
    if isinstance(floor, int | float) and isinstance(kernel, int | float) and kernel > 0:
        return float(floor) / float(kernel)
    return None


def case_mean(cases: list[Mapping[str, Any]], value: Any) -> float:
    """The mean of ``value`` over a record's cases; NaN unless every case has one (records of
    runs before kbx kept them, and other harnesses')."""
    got = [value(c) for c in cases]
    return sum(got) / len(got) if got and all(v is not None for v in got) else math.nan


def interval_end(rec: Mapping[str, Any], end: int) -> float:
    """One end of a record's 95% speedup interval (``speedup_ci``); NaN where it has none (records
    written before kbx kept it, and other harnesses')."""
    ci = rec.get("speedup_ci")
    return float(ci[end]) if isinstance(ci, list) and len(ci) == 2 else math.nan


def kbx_tree_rows(root: Path, gpu: str = "unknown") -> list[dict[str, Any]]:
    """KernelBench-X ``metrics.json`` files under ``root``: ``<gpu>/<method>/metrics.json``
    (the per-GPU layout), ``<method>/metrics.json``, or ``root`` itself being one."""
    files = [root] if root.is_file() else sorted(root.rglob("metrics.json"))
    rows: list[dict[str, Any]] = []
    for file in files:
        parts = file.parent.relative_to(root).parts if root.is_dir() else ()
        method = parts[-1] if parts else file.parent.name
        rows += metrics_rows(file, method, parts[-2] if len(parts) >= 2 else gpu)
    return rows


def metrics_rows(file: Path, method: str, gpu: str) -> list[dict[str, Any]]:
    """Rows of one released-harness ``metrics.json`` (keyed by ``Category/name.py``)."""
    data = json.loads(file.read_text())
    return [metric_row(key, value, method, gpu) for key, value in data.items()]


def metric_row(key: str, m: Mapping[str, Any], method: str, gpu: str) -> dict[str, Any]:
    speedup = number(m.get("speedup"))
    perf_ok = bool(m.get("perf_ok")) and math.isfinite(speedup)
    sizes = [number(r.get("ms")) for r in m.get("performance") or []]
    kernel_ms = sum(sizes) if sizes else number(m.get("runtime_ms"))
    # released speedup = sum of golden ms / sum of generated ms, so golden = speedup * generated
    eager_ms = speedup * kernel_ms if perf_ok else math.nan
    call_ok, exe_ok = bool(m.get("call_ok")), bool(m.get("exe_ok"))
    verdict = (
        "passed" if perf_ok else "perf_fail" if exe_ok else "exe_fail" if call_ok else "call_fail"
    )
    return {
        "task_id": key.removesuffix(".py"),
        "method_name": method,
        "model": "",
        "round": 0,
        "sample": 0,
        "gpu": gpu,
        "verdict": verdict,
        "call_ok": call_ok,
        "exe_ok": call_ok and exe_ok,
        "perf_ok": call_ok and exe_ok and perf_ok,
        "speedup": speedup if perf_ok else math.nan,
        "kernel_ms": kernel_ms if perf_ok else math.nan,
        "eager_ms": eager_ms,
        "gbs": number(m.get("gbs")),
        "tflops": number(m.get("tflops")),
        "device": "cuda",  # the released harness times on a GPU
    }


def number(x: Any) -> float:
    """A metrics field as a float: the harness writes ``"N/A"`` where it has none."""
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else math.nan


def complete(rows: pd.DataFrame, suite: pd.Series) -> pd.DataFrame:
    """Every run (method, model, round, sample, gpu) crossed with every suite task; rows the run
    lacks fail with verdict ``missing`` and are not ``attempted``; tasks outside the suite are
    dropped (``attrs``).  A (run, task) present twice passes when one of its records passed
    (``kbx.core.passrate``), else keeps its last record."""
    suite = suite.sort_index()
    rows = empty_table() if rows.empty else rows
    unknown = sorted(set(rows["task_id"]) - set(suite.index))
    rows = rows[rows["task_id"].isin(suite.index)]
    rows = rows.sort_values("exe_ok", kind="stable").drop_duplicates(KEYS, keep="last")
    runs = rows[KEYS[1:]].drop_duplicates()
    grid = runs.merge(pd.DataFrame({"task_id": suite.index}), how="cross")
    out = grid.merge(rows, on=KEYS, how="left")
    out["attempted"] = out["verdict"].notna()
    out["verdict"] = out["verdict"].fillna(MISSING)
    for col in ("call_ok", "exe_ok", "perf_ok"):
        out[col] = out[col].astype("boolean").fillna(False).astype(bool)
    return finish(out, suite, unknown)


def finish(out: pd.DataFrame, suite: pd.Series, unknown: list[str]) -> pd.DataFrame:
    out["category"] = suite.reindex(out["task_id"]).to_numpy()
    out["quant"] = (out["category"] == "Quantization") | out["task_id"].str.contains(QUANT_NAME)
    out = out.sort_values(KEYS, kind="stable").reset_index(drop=True)
    out.attrs["unknown_tasks"] = unknown
    return out


def empty_table() -> pd.DataFrame:
    """No rows, with the columns and types of a loaded table."""
    types = {"round": "int64", "sample": "int64", "verdict": object}
    types |= {c: bool for c in ("call_ok", "exe_ok", "perf_ok")}
    types |= {c: float for c in ("speedup", "speedup_low", "speedup_high", "kernel_ms")}
    types |= {c: float for c in ("eager_ms", "gbs", "tflops", "sol_score", "roofline_share")}
    types |= {c: object for c in ("task_id", "method", "method_name", "model", "gpu", "input")}
    types |= {c: object for c in ("device", "kbx", "date")}
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in types.items()})


def save(table: pd.DataFrame, path: Path) -> None:
    """The table as Parquet (pyarrow), for a report built elsewhere."""
    table.to_parquet(path, index=False)
