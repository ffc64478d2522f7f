"""What a newcomer's terminal shows: ``make demo`` ends by saying what its deliberate failures
show and what to run next, its three pass rates (the table, summary.json, kbx analyze) agree,
no third-party log line (torch profiler's USDT lines) appears, and the small command-line
contracts: globs in any case, ``--task`` for a lone file, a source of no known task fails."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from kbx.cli import main
from kbx.suite import select
from tests.conftest import REFERENCE, ROOT


def test_make_demo_explains_itself_and_its_pass_rates_agree(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    env = {**os.environ, "COLUMNS": "200"}  # a wide terminal: a table row on one line
    done = subprocess.run(
        ["make", "-s", "demo", f"DEMO_OUT={out}"], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    text = done.stdout + done.stderr
    assert "USDT" not in text and "profiler_start" not in text  # torch's profiler is quiet
    lines = done.stdout.rstrip().splitlines()
    assert lines[-1].strip() == ".venv/bin/kbx eval answers.jsonl --device cpu --out runs/mine"
    words = " ".join(done.stdout.split())
    assert "and 8 deliberate failures" in words and "(crashed: the SIGSEGV above" in words
    caption = (
        "3 of 4 tasks passed (75%); 4 of 184 attempted; not tasks: unknown_task 1, unreadable 1"
    )
    assert caption in words
    assert re.search(r"│ all +│ +9 │ +4 │ +3 │ +75 │", done.stdout), done.stdout[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pass_rate"] == 0.75 and summary["tasks_attempted"] == 4
    assert summary["not_tasks"] == {"unknown_task": 1, "unreadable": 1}
    analysis = tmp_path / "analysis"
    assert main(["analyze", str(out), "--out", str(analysis), "--bootstrap", "20"]) == 0
    rates = json.loads((analysis / "analysis.json").read_text())["report"]["rates"]["demo"]
    assert (rates["exe"]["value"], rates["exe"]["n"]) == (0.75, 4)


def test_task_globs_are_in_any_case_like_categories() -> None:
    assert [t.id for t in select("math/RSQRT")] == ["Math/rsqrt"]
    assert len(select("MATH/*")) == len(select(category="math")) > 10


def kbx(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [str(Path(sys.executable).parent / "kbx"), *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_a_lone_file_names_its_task_and_no_known_task_fails(tmp_path: Path) -> None:
    mine = tmp_path / "my.py"
    shutil.copy(REFERENCE / "Math" / "rsqrt.py", mine)
    done = kbx("eval", str(mine), "--device", "cpu", "--out", str(tmp_path / "a"))
    assert done.returncode == 2, done.stdout
    assert "names a task of the suite" in done.stdout and "name it with --task ID" in done.stdout
    done = kbx(
        "eval", str(mine), "--task", "Math/rsqrt", "--device", "cpu", "--out", str(tmp_path / "b")
    )
    assert done.returncode == 0, done.stdout[-2000:]
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["tasks_passed"] == summary["tasks_attempted"] == 1
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text('{"file": "Math/no_such_task.py", "predict": "x = 1"}\n{"file": \n')
    done = kbx("eval", str(unknown), "--device", "cpu", "--out", str(tmp_path / "c"))
    assert done.returncode == 2 and "no candidate in" in done.stdout, done.stdout
