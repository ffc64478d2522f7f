"""Tables over a run's results: verdicts per category, speedups of the passed candidates."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from kbx.result import geometric_mean


def load_records(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "results.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no results (run `kbx eval ... --out {run_dir}` first)")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def category_table(records: list[dict[str, Any]], title: str = "") -> Table:
    by_cat: dict[str, Counter[str]] = defaultdict(Counter)
    speed: dict[str, list[float]] = defaultdict(list)
    for r in records:
        cat = r["task_id"].split("/")[0] if "/" in r["task_id"] else "(unknown)"
        by_cat[cat][r["verdict"]] += 1
        if r["verdict"] == "passed" and r.get("speedup"):
            speed[cat].append(r["speedup"])
    verdicts = sorted({v for c in by_cat.values() for v in c}, key=lambda v: (v != "passed", v))
    table = Table(title=title or None)
    table.add_column("category")
    for v in verdicts:
        table.add_column(v, justify="right")
    table.add_column("pass %", justify="right")
    table.add_column("speedup (geo)", justify="right")
    total: Counter[str] = Counter()
    for cat in sorted(by_cat):
        counts = by_cat[cat]
        total.update(counts)
        table.add_row(cat, *row_cells(counts, verdicts), speed_cell(speed[cat]))
    table.add_row(
        "all",
        *row_cells(total, verdicts),
        speed_cell([s for v in speed.values() for s in v]),
        style="bold",
    )
    return table


def row_cells(counts: Counter[str], verdicts: list[str]) -> list[str]:
    n = sum(counts.values())
    return [str(counts[v] or "") for v in verdicts] + [f"{100 * counts['passed'] / n:.0f}"]


def speed_cell(values: list[float]) -> str:
    return f"{geometric_mean(values):.2f}x" if values else "-"


def failures_table(records: list[dict[str, Any]], limit: int = 50) -> Table:
    table = Table(title="candidates that did not pass")
    for col in ("task", "verdict", "detail"):
        table.add_column(col, overflow="fold")
    for r in [r for r in records if r["verdict"] != "passed"][:limit]:
        table.add_row(r["task_id"], r["verdict"], r["detail"][:200])
    return table


def print_report(run_dir: Path, console: Console, details: bool = True) -> None:
    records = load_records(run_dir)
    console.print(category_table(records, title=f"kbx results: {run_dir}"))
    if details and any(r["verdict"] != "passed" for r in records):
        console.print(failures_table(records))
