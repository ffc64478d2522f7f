"""Tables over a run's results: verdicts per category, speedups (geometric means of the passed
candidates' per-task speedups, vs PyTorch eager and vs torch.compile)."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from kbx.core import passrate
from kbx.core.result import geometric_mean
from kbx.run.store import Store, bench_unchecked

OTHERS_SHOWN = 4  # verdicts named in a row's "other verdicts" cell; the rest are counted


class NoResults(Exception):
    """A run folder with no results to report, none yet or none readable; the message names
    the folder or the file."""


def load_records(run_dir: Path) -> list[dict[str, Any]]:
    """The run's results.jsonl; for a run stopped before it wrote one (a time limit, Ctrl-C),
    the records its store holds so far.  Raises ``NoResults`` when there are none."""
    path, db = run_dir / "results.jsonl", run_dir / "kbx.sqlite"
    if not run_dir.is_dir():
        what = "not a run folder" if run_dir.exists() else "no such run folder"
        raise NoResults(f"{run_dir}: {what} (the DIR of `kbx eval SOURCE --out DIR`)")
    if path.exists():
        records = read_jsonl(path)
    elif db.exists():
        records = read_store(db)
    else:
        raise NoResults(f"no results in {run_dir} (run `kbx eval SOURCE --out {run_dir}` first)")
    if not records:
        raise NoResults(f"no results in {run_dir} yet (its run has finished no candidate)")
    return records


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    records = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise NoResults(f"{path}:{number}: not a JSON record ({exc.msg})") from None
    return records


def read_store(db: Path) -> list[dict[str, Any]]:
    try:
        store = Store(db)
    except sqlite3.DatabaseError as exc:
        raise NoResults(f"{db}: not a kbx store ({exc})") from None
    try:
        return store.records()
    finally:
        store.close()


def category_table(records: list[dict[str, Any]], title: str = "") -> Table:
    """One row per category: candidates, tasks attempted and passed, the pass rate
    (``kbx.core.passrate``), speedups and the other verdicts; candidates that name no task of the
    suite in a row of their own, left out of ``all``; the caption says n of the suite."""
    by_cat: dict[str, Counter[str]] = defaultdict(Counter)
    speed: dict[str, list[float]] = defaultdict(list)
    vs_compile: dict[str, list[float]] = defaultdict(list)
    for r in records:
        cat = r["task_id"].split("/")[0] if passrate.is_task(r) else NOT_TASKS
        by_cat[cat][r["verdict"]] += 1
        if r["verdict"] == "passed" and r.get("speedup"):
            speed[cat].append(r["speedup"])
        if r["verdict"] == "passed" and r.get("speedup_compile"):
            vs_compile[cat].append(r["speedup_compile"])
    tasks = task_counts(records)
    table = Table(
        title=title or None, caption=passrate.tally(records, passrate.suite_size()).line()
    )
    for col, justify in COLUMNS:
        table.add_column(col, justify=justify, overflow="fold")  # type: ignore[arg-type]
    total: Counter[str] = Counter()
    for cat in sorted(by_cat, key=lambda c: (c == NOT_TASKS, c)):
        total.update(by_cat[cat] if cat != NOT_TASKS else {})
        table.add_row(
            cat,
            str(sum(by_cat[cat].values())),
            *rate_cells(tasks.get(cat)),
            speed_cell(speed[cat]),
            speed_cell(vs_compile[cat]),
            others(by_cat[cat]),
        )
    everything = (sum(t for t, _ in tasks.values()), sum(p for _, p in tasks.values()))
    table.add_row(
        "all",
        str(sum(total.values())),
        *rate_cells(everything),
        speed_cell(flat({k: v for k, v in speed.items() if k != NOT_TASKS})),
        speed_cell(flat({k: v for k, v in vs_compile.items() if k != NOT_TASKS})),
        others(total),
        style="bold",
    )
    return table


COLUMNS = (
    ("category", "left"),
    ("candidates", "right"),
    ("tasks", "right"),
    ("passed", "right"),
    ("pass %", "right"),
    ("vs eager", "right"),
    ("vs compile", "right"),
    ("other verdicts", "left"),
)
NOT_TASKS = "(no task)"  # the row of candidates that name no task of the suite


def task_counts(records: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """Per category, tasks attempted and passed, as ``kbx.core.passrate`` counts them."""
    out: dict[str, tuple[int, int]] = {}
    for cat in sorted({r["task_id"].split("/")[0] for r in passrate.final(records)}):
        mine = [r for r in records if passrate.is_task(r) and r["task_id"].startswith(cat + "/")]
        tally = passrate.tally(mine, 0)
        out[cat] = (tally.attempted, tally.passed)
    return out


def flat(groups: dict[str, list[float]]) -> list[float]:
    return [v for values in groups.values() for v in values]


def rate_cells(counts: tuple[int, int] | None) -> list[str]:
    """Tasks attempted, passed, and the pass rate; n/a where none was attempted."""
    if not counts:
        return ["-", "-", "n/a"]
    attempted, passed = counts
    return [str(attempted), str(passed), f"{100 * passed / attempted:.0f}" if attempted else "n/a"]


def others(counts: Counter[str], shown: int = OTHERS_SHOWN) -> str:
    """The verdicts other than passed, the most frequent first; past ``shown`` of them, how many
    more verdicts and candidates (a run of many kinds of failure kept the cell 20 lines tall)."""
    rest = sorted((v for v in counts if v != "passed" and counts[v]), key=lambda v: (-counts[v], v))
    cell = ", ".join(f"{v} {counts[v]}" for v in rest[:shown])
    if len(rest) > shown:
        more = sum(counts[v] for v in rest[shown:])
        cell += f", +{len(rest) - shown} more ({more} candidates)"
    return cell


def speed_cell(values: list[float]) -> str:
    return f"{geometric_mean(values):.2f}x" if values else "-"


def failures_table(records: list[dict[str, Any]], limit: int = 50) -> Table:
    table = Table(title="candidates that did not pass")
    for col in ("task / source", "verdict", "detail"):
        table.add_column(col, overflow="fold")
    failed = [r for r in records if r["verdict"] != "passed"]
    if len(failed) > limit:
        table.caption = f"the first {limit}; {len(failed) - limit} more in the run's results.jsonl"
    for r in failed[:limit]:
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
