"""Tables over a run's results: verdicts per category, speedups (geometric means of the passed
candidates' per-task speedups, vs PyTorch eager and vs torch.compile)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from kbx.result import geometric_mean
from kbx.store import bench_unchecked


def load_records(run_dir: Path) -> list[dict[str, Any]]:
    """The run's results.jsonl; for a run stopped before it wrote one (a time limit, Ctrl-C),
    the records its store holds so far."""
    path = run_dir / "results.jsonl"
    if not path.exists() and (run_dir / "kbx.sqlite").exists():
        from kbx.store import Store

        store = Store(run_dir / "kbx.sqlite")
        try:
            return store.records()
        finally:
            store.close()
    if not path.exists():
        raise FileNotFoundError(f"{path}: no results (run `kbx eval ... --out {run_dir}` first)")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def category_table(records: list[dict[str, Any]], title: str = "") -> Table:
    """One row per category: candidates, passed, pass rate, speedup, and the other verdicts."""
    by_cat: dict[str, Counter[str]] = defaultdict(Counter)
    speed: dict[str, list[float]] = defaultdict(list)
    vs_compile: dict[str, list[float]] = defaultdict(list)
    for r in records:
        cat = r["task_id"].split("/")[0] if "/" in r["task_id"] else "(unknown)"
        by_cat[cat][r["verdict"]] += 1
        if r["verdict"] == "passed" and r.get("speedup"):
            speed[cat].append(r["speedup"])
        if r["verdict"] == "passed" and r.get("speedup_compile"):
            vs_compile[cat].append(r["speedup_compile"])
    table = Table(title=title or None)
    for col, justify in (
        ("category", "left"),
        ("candidates", "right"),
        ("passed", "right"),
        ("pass %", "right"),
        ("vs eager", "right"),
        ("vs compile", "right"),
        ("other verdicts", "left"),
    ):
        table.add_column(col, justify=justify, overflow="fold")  # type: ignore[arg-type]
    total: Counter[str] = Counter()
    for cat in sorted(by_cat):
        total.update(by_cat[cat])
        table.add_row(
            cat,
            *row_cells(by_cat[cat]),
            speed_cell(speed[cat]),
            speed_cell(vs_compile[cat]),
            others(by_cat[cat]),
        )
    table.add_row(
        "all",
        *row_cells(total),
        speed_cell(flat(speed)),
        speed_cell(flat(vs_compile)),
        others(total),
        style="bold",
    )
    return table


def flat(groups: dict[str, list[float]]) -> list[float]:
    return [v for values in groups.values() for v in values]


def row_cells(counts: Counter[str]) -> list[str]:
    n = sum(counts.values())
    return [str(n), str(counts["passed"]), f"{100 * counts['passed'] / n:.0f}"]


def others(counts: Counter[str]) -> str:
    return ", ".join(f"{v} {n}" for v, n in sorted(counts.items()) if v != "passed")


def speed_cell(values: list[float]) -> str:
    return f"{geometric_mean(values):.2f}x" if values else "-"


def failures_table(records: list[dict[str, Any]], limit: int = 50) -> Table:
    table = Table(title="candidates that did not pass")
    for col in ("task / source", "verdict", "detail"):
        table.add_column(col, overflow="fold")
    for r in [r for r in records if r["verdict"] != "passed"][:limit]:
        table.add_row(f"{r['task_id']}\n{r['source']}", r["verdict"], r["detail"][:200])
    return table


def print_report(run_dir: Path, console: Console, details: bool = True) -> None:
    records = load_records(run_dir)
    console.print(category_table(records, title=f"kbx results: {run_dir}"))
    print_notes(records, console)
    if details and any(r["verdict"] != "passed" for r in records):
        console.print(failures_table(records))


def print_notes(records: list[dict[str, Any]], console: Console) -> None:
    """What a reader of the tables must know: benchmark sizes left unchecked, a sandbox that
    is not at its full level."""
    unchecked = sum(1 for r in records if bench_unchecked(r))
    if unchecked:
        console.print(
            f"benchmark sizes not checked for {unchecked} passed candidate(s): the CPU "
            "interpreter could not afford them; --device cuda checks every one"
        )
    levels = sorted({r.get("sandbox") or "unknown" for r in records})
    if records and levels != ["full"]:
        console.print(f"sandbox level: {', '.join(levels)} (docs/design/sandbox.md)")
