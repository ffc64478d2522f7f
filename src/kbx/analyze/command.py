"""``kbx analyze``: load runs, compute the statistics, write analysis.json, results.csv,
results.parquet and report.html to one folder, and print the headline tables."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table as RichTable

from kbx.analyze import export, fill, load
from kbx.analyze.bootstrap import LEVEL, Estimate
from kbx.analyze.identity import RunIdentity, identities
from kbx.analyze.report import write_report

SCHEMA_VERSION = 1  # of analysis.json: docs/design/analysis.md
OUTPUTS = ("analysis.json", "results.csv", "results.parquet", "report.html")


class NoInput(Exception):
    """An input that is no folder, or holds no results: the message says which."""


def check_inputs(inputs: Sequence[Path]) -> None:
    for path in inputs:
        if not path.exists():
            raise NoInput(f"{path}: no such file or folder")
        kbx_run = path.name == "results.jsonl" or (path / "results.jsonl").exists()
        released = path.name == "metrics.json" or any(path.rglob("metrics.json"))
        if not (kbx_run or released):
            raise NoInput(f"{path}: no results.jsonl (a kbx run) or metrics.json (KernelBench-X)")


def analyze(
    inputs: Sequence[Path],
    out: Path,
    resamples: int = 10_000,
    seed: int = 0,
    console: Console | None = None,
    kernelbenchx: Path | None = None,
    names: Sequence[str] = (),
    pool: bool = False,
    over: str = "attempted",
) -> dict[str, Any]:
    """Writes OUTPUTS to ``out`` (and the released harness's files to ``kernelbenchx``) and
    returns analysis.json's content; ``names``: the labels of the first inputs' runs, in
    order; ``pool``: inputs whose runs share a label count as one run; ``over``: the rates'
    denominator (``fill.OVER``).  Raises NoInput."""
    check_inputs(inputs)
    try:
        table = load.load(inputs, names=names, pool=pool)
    except load.Clash as exc:
        raise NoInput(str(exc)) from None
    if table.empty:
        raise NoInput(f"no records of a suite task in {', '.join(map(str, inputs))}")
    table = fill.counting(table, over)
    runs = identities(table)
    st = fill.compute(table, resamples, seed, over)
    title = "kbx analysis: " + " vs ".join(r.label for r in runs)
    results = fill.results(table, st, title, runs, over)
    doc = {
        "schema_version": SCHEMA_VERSION,
        "inputs": [str(p) for p in inputs],
        "runs": [plain(r) for r in runs],
        "over": over,
        "n_tasks": int(table["task_id"].nunique()),
        "rows": len(table),
        "resamples": resamples,
        "seed": seed,
        "level": LEVEL,
        "unknown_tasks": list(table.attrs.get("unknown_tasks", [])),
        "statistics": {k: plain(v) for k, v in st.items()},
        "report": plain(results),
    }
    write(table, doc, results, out)
    if kernelbenchx is not None:
        export.kernelbenchx(table, kernelbenchx)
    if console is not None:
        print_tables(console, st, out, runs)
    return doc


def plain(value: Any) -> Any:
    """A model (or list of them) as JSON values; NaN becomes null."""
    if isinstance(value, list):
        return [plain(v) for v in value]
    assert isinstance(value, BaseModel)
    return json.loads(value.model_dump_json())


def write(table: pd.DataFrame, doc: dict[str, Any], results: Any, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "analysis.json").write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    table.to_csv(out / "results.csv", index=False)
    load.save(table, out / "results.parquet")
    write_report(results, out / "report.html")


def pct(est: Estimate | None, bounds: bool = True) -> str:
    if est is None or not math.isfinite(est.value):
        return "n/a"
    text = f"{100 * est.value:.1f}%"
    if bounds and math.isfinite(est.lo) and math.isfinite(est.hi):
        text += f" [{100 * est.lo:.1f}, {100 * est.hi:.1f}]"
    return text


def print_tables(console: Console, st: dict[str, Any], out: Path, runs: list[RunIdentity]) -> None:
    for run in runs:
        console.print(f"read {run.line()}", highlight=False, soft_wrap=True)
    level = f"{100 * LEVEL:.0f}% bootstrap intervals over tasks, resampled within category"
    rates, fast = fill.index(st["rates"]), fill.index(st["fast_p"])
    t = RichTable(title=f"Rates per method (final round; {level})")
    for col in ("method", "tasks counted", "call", "exe", "fast_1"):
        t.add_column(col, justify="left" if col == "method" else "right")
    for run in runs:
        row = rates.get((run.label,), {})
        f1 = fast.get((run.label,), {}).get("fast_1") if run.timed else None
        exe = row.get("exe")
        counted = f"{exe.n if exe else 0} of {run.suite}"
        t.add_row(run.label, counted, pct(row.get("call")), pct(exe), pct(f1))
    console.print(t)
    print_categories(console, st)
    print_headlines(console, st)
    console.print(f"wrote {', '.join(OUTPUTS)} to {out}", highlight=False, soft_wrap=True)


def print_categories(console: Console, st: dict[str, Any]) -> None:
    cells = fill.index(st["category_method"])
    fails = fill.index(st["solved"])
    methods = sorted({m for _, m in cells} - {"all"})
    methods += ["all"] if len(methods) > 1 else []
    t = RichTable(title="exe rate per category x method (all: pooled); all fail: no method solves")
    t.add_column("category")
    t.add_column("tasks counted", justify="right")
    for m in methods:
        t.add_column(m, justify="right")
    t.add_column("all fail", justify="right")
    for c in sorted({c for c, _ in cells}):
        row = [pct(cells.get((c, m), {}).get("exe"), bounds=False) for m in methods]
        fail = fails.get((c,), {}).get("all_fail")
        t.add_row(c, str(fail.n if fail else "-"), *row, pct(fail, bounds=False))
    console.print(t)


def print_headlines(console: Console, st: dict[str, Any]) -> None:
    pooled = st["slower_share_pooled"].rows
    slower = pooled[0].stats["slower"] if pooled else None
    fail = fill.index(st["solved"]).get(("all",), {}).get("all_fail")
    n = slower.n if slower else 0
    console.print(
        f"correct but slower than eager: {pct(slower)} of the correct, timed kernels "
        f"({n} tasks with one); tasks no method solves: {pct(fail)}",
        highlight=False,
        soft_wrap=True,
    )
