"""SQLite results store (WAL) of a run folder, and its JSONL / summary exports.

Each finished candidate is committed at once under its resume key, so a run killed at any point
(SIGKILL included) loses at most the candidates in flight, and re-running skips the rest.  A
commit that fails (the disk full) does not end the run: the record is kept in memory, written
with the next commit that works, and exported all the same.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from kbx.core import passrate
from kbx.suite.verdict import Verdict

SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    verdict TEXT NOT NULL,
    record TEXT NOT NULL,
    seq INTEGER NOT NULL
);
"""


class Store:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        self.lock = threading.Lock()
        self.pending: dict[str, dict[str, Any]] = {}  # records whose commit failed, in order

    def keys(self) -> set[str]:
        with self.lock:
            return {row[0] for row in self.db.execute("SELECT key FROM results")} | set(
                self.pending
            )

    def put(self, key: str, record: dict[str, Any]) -> None:
        """Commit ``record``, with any whose commit failed before it; a failure keeps them for
        the next (one line on stderr), never ends the run."""
        with self.lock:
            self.pending.pop(key, None)
            self.pending[key] = record
            try:
                for k, r in list(self.pending.items()):
                    self.insert(k, r)
                    del self.pending[k]
            except sqlite3.Error as exc:
                sys.stderr.write(f"kbx: results store: {exc}; {len(self.pending)} kept in memory\n")

    def insert(self, key: str, record: dict[str, Any]) -> None:
        seq = self.db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM results").fetchone()[0]
        self.db.execute(
            "INSERT OR REPLACE INTO results (key, task_id, verdict, record, seq) "
            "VALUES (?, ?, ?, ?, ?)",
            (key, record["task_id"], record["verdict"], json.dumps(record), seq),
        )

    def records(self) -> list[dict[str, Any]]:
        with self.lock:
            rows = self.db.execute("SELECT record FROM results ORDER BY seq").fetchall()
            stored = [json.loads(r[0]) for r in rows]
            later = list(self.pending.values())
        return [r for r in stored if r.get("key") not in self.pending] + later

    def seed(self, results: Path) -> int:
        """Add the records of an exported ``results.jsonl`` (another machine's run, say) that this
        store lacks, so a run over the same source skips them; returns how many were added."""
        have = self.keys()
        added = 0
        for line in results.read_text().splitlines():
            record = json.loads(line) if line.strip() else {}
            key = record.get("key")
            if key and key not in have:
                self.put(key, record)
                have.add(key)
                added += 1
        return added

    def close(self) -> None:
        self.db.close()


def summarize(records: list[dict[str, Any]], suite_size: int) -> dict[str, Any]:
    """Counts per verdict over candidates; the pass rate over the tasks attempted
    (``kbx.core.passrate``: unreadable lines and unknown tasks are counted apart, in ``not_tasks``).

    ``suite_pass_rate`` divides by the number of suite tasks selected for the run, so tasks a
    submission left out count as failures (KernelBench-X divided by the files submitted).
    """
    counts = Counter(r["verdict"] for r in records)
    best: dict[str, str] = {}
    for r in passrate.final(records):
        if best.get(r["task_id"]) != Verdict.PASSED:
            best[r["task_id"]] = r["verdict"]
    per_task = Counter(best.values())
    tally = passrate.tally(records, passrate.suite_size())
    speedups = [r["speedup"] for r in records if r["verdict"] == "passed" and r.get("speedup")]
    return {
        "candidates": len(records),
        "tasks_attempted": tally.attempted,
        "tasks_passed": tally.passed,
        "tasks_selected": suite_size,
        "tasks_in_suite": tally.suite,
        "not_tasks": tally.apart,
        "counts": dict(sorted(counts.items())),
        "rates": {v: per_task[v] / len(best) for v in sorted(per_task)} if best else {},
        "pass_rate": tally.rate(),
        "suite_pass_rate": tally.passed / suite_size if suite_size else None,
        "harness_errors": counts.get(Verdict.HARNESS_ERROR, 0),
        "judged_again": sum(1 for r in records if r.get("rerun")),  # ``kbx.run.rerun``
        "passed_with_speedup": len(speedups),
        "faster_than_eager": sum(1 for s in speedups if s > 1.0),
        "passed_bench_unchecked": sum(1 for r in records if bench_unchecked(r)),
        "sandbox": dict(sorted(Counter(r.get("sandbox") or "unknown" for r in records).items())),
    }


def bench_unchecked(record: dict[str, Any]) -> bool:
    """A passed candidate some of whose benchmark sizes were not checked (the CPU interpreter
    could not afford them)."""
    checked = record.get("checked") or {}
    return record.get("verdict") == Verdict.PASSED and checked.get("bench", 0) < checked.get(
        "bench_total", 0
    )


def export(
    store: Store,
    out_dir: Path,
    suite_size: int,
    keys: set[str] | None = None,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Rewrite results.jsonl and summary.json from the store (atomic replace).

    With ``keys``, only those candidates are exported (the ones the current source holds);
    ``config``, the run's resolved configuration, is recorded in the summary.
    """
    records = [r for r in store.records() if keys is None or r.get("key") in keys]
    write_atomic(out_dir / "results.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    summary = summarize(records, suite_size)
    if config is not None:
        summary["config"] = config
    write_atomic(out_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    return summary


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
