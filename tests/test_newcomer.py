"""Issue 25's newcomer path: what a new user on a fresh CPU clone ran into.  Every error is one
line naming the problem and a non-zero exit; tables stay readable in pipes; help texts say what
the commands print; the tested pins have one source; long tests show progress."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from kbx.cli import main
from kbx.commands.report import others
from kbx.run.store import Store, export
from kbx.suite import categories, select
from tests.conftest import BAD, ROOT

KBX = Path(sys.executable).with_name("kbx")
CATEGORY_ROWS = ("Activation", "Convolution", "Fusion", "LinearAlgebra", "Normalization")
VERDICTS = ("mismatch", "no_triton", "timeout", "wrong_shape", "wrong_dtype", "compile_failed")


def kbx(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The installed command, its output a pipe (no terminal) and no COLUMNS set."""
    command = [str(KBX)] if KBX.exists() else [sys.executable, "-m", "kbx"]
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run(
        command + list(argv), capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


def error(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 2) -> str:
    """The one line ``kbx argv`` prints before it exits with ``code``."""
    assert main(argv) == code
    return one_line(capsys.readouterr().out)


def fake_run(folder: Path) -> Path:
    """A run folder whose results hold many kinds of failure in five categories."""
    rows = []
    for c, cat in enumerate(CATEGORY_ROWS):
        for v, verdict in enumerate(("passed",) + VERDICTS):
            for i in range(1 + (c + v) % 3):
                rows.append(
                    {
                        "task_id": f"{cat}/task_{v}_{i}",
                        "verdict": verdict,
                        "source": f"submissions/a-long-model-name/{cat}/task_{v}_{i}.py",
                        "detail": f"{verdict}: " + "why " * 30,
                        "speedup": None,
                        "sandbox": "full",
                    }
                )
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


# 1. A run with no candidates, and a report with no results: no ZeroDivisionError


def test_eval_of_an_empty_source_says_so_and_exits_2(tmp_path, capsys):
    empty, blank = tmp_path / "empty", tmp_path / "blank.jsonl"
    empty.mkdir()
    blank.write_text("\n\n")
    for source in (empty, blank):
        out = tmp_path / f"run-{source.name}"
        line = error(capsys, ["eval", str(source), "--device", "cpu", "--out", str(out)])
        assert line.startswith(f"no candidates in {source}")
        assert not out.exists()  # refused before the run began
    notes = tmp_path / "notes.txt"
    notes.write_text("")
    line = error(capsys, ["eval", str(notes), "--device", "cpu"])
    assert line == f"{notes}: expected a folder, a .py file or a .jsonl file"


def test_eval_with_tasks_that_match_nothing_says_so_and_exits_2(tmp_path, capsys):
    source, out = str(BAD / "no_triton"), str(tmp_path / "run")
    line = error(capsys, ["eval", source, "--device", "cpu", "--tasks", "Nope/*", "--out", out])
    assert line.startswith("--tasks 'Nope/*' matches no task")
    line = error(capsys, ["eval", source, "--device", "cpu", "--tasks", "Loss/*", "--out", out])
    assert line == f"no candidate in {source} is for a task of --tasks 'Loss/*'"
    assert not Path(out).exists()


def test_eval_of_an_empty_folder_through_the_installed_command(tmp_path):
    (tmp_path / "empty").mkdir()
    run = kbx("eval", "empty", "--device", "cpu", "--out", "r", cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert one_line(run.stdout).startswith("no candidates in empty") and not run.stderr


def test_report_of_a_run_without_results_says_so(tmp_path, capsys):
    stopped = tmp_path / "stopped"
    Store(stopped / "kbx.sqlite").close()  # a run stopped before its first result
    assert error(capsys, ["report", str(stopped)]).startswith(f"no results in {stopped} yet")
    (stopped / "results.jsonl").write_text("")  # an empty run's export
    assert error(capsys, ["report", str(stopped)]).startswith(f"no results in {stopped} yet")
    (stopped / "results.jsonl").write_text("{not json\n")
    assert error(capsys, ["report", str(stopped)]).startswith(f"{stopped}/results.jsonl:1: ")
    bare = tmp_path / "bare"
    bare.mkdir()
    assert error(capsys, ["report", str(bare)]).startswith(f"no results in {bare}")
    missing = tmp_path / "missing"
    assert error(capsys, ["report", str(missing)]).startswith(f"{missing}: no such run folder")


def test_an_empty_store_exports_an_empty_summary(tmp_path):
    store = Store(tmp_path / "kbx.sqlite")  # what kbx.api's eval of an empty source exports
    try:
        summary = export(store, tmp_path, suite_size=0)
    finally:
        store.close()
    assert summary["candidates"] == 0 and summary["tasks_attempted"] == 0
    assert summary["pass_rate"] is None and summary["suite_pass_rate"] is None  # n/a, not 0%
    assert (tmp_path / "results.jsonl").read_text() == ""


# 2. Tables in logs and pipes


def test_report_tables_keep_a_row_a_line_in_a_pipe(tmp_path):
    run = kbx("report", str(fake_run(tmp_path / "run")), "--brief")
    assert run.returncode == 0, run.stderr
    rows = [line for line in run.stdout.splitlines() if line.startswith("│")]
    assert [row.split()[1] for row in rows] == [*CATEGORY_ROWS, "all"]  # no cell folded
    for row in rows:  # the numbers, then 4 of the 6 other verdicts named
        assert re.search(r"│\s+\d+ │\s+\d+ │\s+\d+ │", row), row
        assert re.search(r"(\w+ \d+, ){4}\+2 more \(\d+ candidates\) +│$", row), row


def test_report_tables_are_wide_under_capture_too(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["report", str(fake_run(tmp_path / "run"))]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) > 100
    assert "submissions/a-long-model-name/Activation/task_1_0.py" in out  # one path, one line
    assert "the first 50; 10 more in the run's results.jsonl" in out  # none left out unsaid


def test_the_other_verdicts_cell_names_the_most_frequent_four():
    counts = Counter({"passed": 9, "mismatch": 5, "timeout": 1, "crashed": 3})
    assert others(counts) == "mismatch 5, crashed 3, timeout 1"
    counts.update({"no_triton": 2, "wrong_shape": 2, "forbidden": 1, "no_code": 4})
    assert others(counts) == "mismatch 5, no_code 4, crashed 3, no_triton 2, +3 more (4 candidates)"


# 3. Help texts that say what the commands do and print


def help_text(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--help"])
    assert exit_.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # unwrapped


def braced(text: str, after: str) -> set[str]:
    """The field names in the first ``{a, b, c}`` of ``text`` after ``after``."""
    match = re.search(re.escape(after) + r".*?\{([^}]*)\}", text)
    assert match, text
    return {f.strip() for f in match.group(1).split(",")}


def test_help_of_tasks_and_prompts_names_the_fields_they_write(tmp_path, capsys):
    assert main(["tasks", "--json", "--category", "Math"]) == 0
    printed = set(json.loads(capsys.readouterr().out)[0])
    assert braced(help_text(capsys, "tasks"), "--json") == printed
    out = tmp_path / "prompts.jsonl"
    assert main(["prompts", "--tasks", "Math/rsqrt", "--out", str(out)]) == 0
    written = set(json.loads(out.read_text()))
    assert braced(help_text(capsys, "prompts"), "--out FILE") == written


def test_every_command_says_what_it_does_and_every_argument_has_help(capsys):
    from kbx.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for name, parser in sub.choices.items():
        if name != "eval":  # eval's help is being redesigned elsewhere (issue 25, item 7)
            assert parser.description, name
        for action in parser._actions:
            assert action.help, (name, action.dest)
    assert "cuda (default when a GPU is visible) or cpu" in help_text(capsys, "validate")
    assert "DIR the run folder, as given to `kbx eval --out`" in help_text(capsys, "report")


# 4. Categories in any case; selections that select nothing


def test_tasks_take_a_category_in_any_case(capsys):
    assert main(["tasks", "--category", "fusion", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["category"] for r in rows} == {"Fusion"}
    assert len(rows) == len(select(category="Fusion")) > 0


def test_an_unknown_category_lists_the_categories(capsys):
    line = error(capsys, ["tasks", "--category", "Nope"])
    assert line == f"no category 'Nope'; the categories: {', '.join(categories())}"
    assert "Fusion" in categories() and "LinearAlgebra" in categories()


def test_prompts_for_no_task_write_nothing(tmp_path, capsys):
    out = tmp_path / "p.jsonl"
    line = error(capsys, ["prompts", "--tasks", "Nope/*", "--out", str(out)])
    assert line.startswith("--tasks 'Nope/*' matches no task")
    assert not out.exists()
    assert error(capsys, ["validate", "--tasks", "Nope/*", "--device", "cpu"]) == line
    assert error(capsys, ["prompts", "--out", str(tmp_path)]).startswith(f"{tmp_path}: cannot")


def test_prompts_into_a_missing_folder_make_it(tmp_path):
    out = tmp_path / "missing" / "dir" / "p.jsonl"
    run = kbx("prompts", "--tasks", "Math/rsqrt,Math/abs", "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert one_line(run.stdout) == f"2 prompts written to {out}"
    assert [json.loads(x)["task_id"] for x in out.read_text().splitlines()] == [
        "Math/abs",
        "Math/rsqrt",
    ]


# 5. The tested pins: one source for `make install` and `pip install . -c constraints.txt`


def test_make_install_takes_the_tested_pins_from_constraints_txt():
    if shutil.which("make") is None:
        pytest.skip("no make here")
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.split("#")[0].strip():
            req = Requirement(line)
            pins[req.name] = str(req.specifier).removeprefix("==")
    assert set(pins) == {"torch", "triton"}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for dep in map(Requirement, project["dependencies"]):
        if dep.name in pins:  # the tested version lies in the supported range
            assert dep.specifier.contains(pins[dep.name]), (dep, pins[dep.name])
    plan = subprocess.run(
        ["make", "-n", "-B", "install"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    installs = [line for line in plan.splitlines() if " pip install " in line and "-q " in line]
    assert len(installs) == 3  # pip itself, then torch and triton, then kbx
    assert all("-c constraints.txt" in line for line in installs[1:]), installs
    assert "==" not in plan  # no second list of versions


# 6. Long tests show progress in `make test`'s output


def test_progress_lines_pass_pytests_capture(tmp_path):
    (tmp_path / "test_long.py").write_text(
        "from tests.progress import progress\n\n"
        "def test_long(capsys):\n"
        "    step = progress(capsys, 'tasks', 3, every_s=0.0)\n"
        "    for name in ('A/a', 'B/b', 'C/c'):\n"
        "        step(name + ': passed')\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout
    assert "  tasks: 2/3 done in 0 s, last B/b: passed" in run.stdout.splitlines()
    assert "  tasks: 3/3 done in 0 s, last C/c: passed" in run.stdout.splitlines()
    if shutil.which("make"):
        plan = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True)
        assert "pytest -q --durations=10" in plan.stdout  # the slowest tests named at the end
