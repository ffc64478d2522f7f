"""Results store: resume keys, no duplicates, summary rates over tasks."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

from kbx.run.store import Store, summarize
from tests.conftest import JOBS1, REFERENCE, ROOT

SOURCE_TASKS = [
    "Activation/gelu",
    "Math/rsqrt",
    "Pooling/avg_pool1d",
    "Reduce/sum",
    "Index/scatter",
    "Optimizer/AdamW",
]


def record(task, verdict, speedup=None):
    return {"task_id": task, "verdict": verdict, "speedup": speedup}


def test_put_replaces_by_key(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    store.put("k1", record("A/a", "mismatch"))
    store.put("k1", record("A/a", "passed"))
    store.put("k2", record("A/b", "passed"))
    assert store.keys() == {"k1", "k2"}
    assert [r["verdict"] for r in store.records()] == ["passed", "passed"]


def test_a_failed_commit_keeps_the_record_and_the_run_going(tmp_path, capsys):
    """A full disk (SQLite's "database or disk is full") costs no record and ends no run: the
    record is kept in memory, exported, and written with the next commit that works."""
    store = Store(tmp_path / "s.sqlite")
    store.put("k1", dict(record("A/a", "passed"), key="k1"))
    real = store.insert

    def full(key, rec):
        raise sqlite3.OperationalError("database or disk is full")

    store.insert = full  # type: ignore[method-assign]
    store.put("k2", dict(record("A/b", "mismatch"), key="k2"))
    assert "database or disk is full" in capsys.readouterr().err
    assert store.keys() == {"k1", "k2"}
    assert [r["key"] for r in store.records()] == ["k1", "k2"]
    store.insert = real  # type: ignore[method-assign]
    store.put("k3", dict(record("A/c", "passed"), key="k3"))
    assert not store.pending
    store.close()
    again = Store(tmp_path / "s.sqlite")
    assert [r["key"] for r in again.records()] == ["k1", "k2", "k3"]


def test_seed_adds_only_missing_records_from_an_export(tmp_path):
    exported = tmp_path / "results.jsonl"
    rows = [dict(record("A/a", "passed", 2.0), key="k1"), dict(record("A/b", "timeout"), key="k2")]
    exported.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")
    store = Store(tmp_path / "s.sqlite")
    store.put("k2", record("A/b", "passed", 1.5))  # already here: kept, not overwritten
    assert store.seed(exported) == 1
    assert store.keys() == {"k1", "k2"}
    verdicts = {r["task_id"]: r["verdict"] for r in store.records()}
    assert verdicts == {"A/a": "passed", "A/b": "passed"}


def test_summary_rates_are_over_tasks_and_suite():
    recs = [record("A/a", "mismatch"), record("A/a", "passed", 2.0), record("A/b", "timeout")]
    s = summarize(recs, suite_size=4)
    assert s["counts"] == {"mismatch": 1, "passed": 1, "timeout": 1}
    assert s["tasks_attempted"] == 2 and s["pass_rate"] == 0.5
    assert s["suite_pass_rate"] == 0.25
    assert s["faster_than_eager"] == 1


def test_sigkill_mid_run_then_resume_gives_one_record_each(tmp_path):
    source = tmp_path / "src"
    for task in SOURCE_TASKS:
        dest = source / f"{task}.py"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REFERENCE / f"{task}.py", dest)
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "kbx.cli",
        "eval",
        str(source),
        "--device",
        "cpu",
        "--out",
        str(out),
        "--config",
        str(JOBS1),
    ]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    db = out / "kbx.sqlite"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if db.exists() and Store(db).keys():
            break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the whole group: kbx and the child in flight
    proc.wait()
    done_before = len(Store(db).keys())
    n = len(SOURCE_TASKS)
    assert 1 <= done_before < n
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == n
    assert len({r["source"] for r in records}) == n
    assert all(r["verdict"] == "passed" for r in records)
