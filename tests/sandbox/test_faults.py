"""Faults of a candidate beside honest ones: each fault gets its own verdict and nothing else.

Every fault of the exploit corpus (tests/exploits: segfault, abort, a hang in C code, an infinite
Python loop, host memory, os._exit at import, a fork bomb, a setsid orphan, writes outside, the
network, killing kbx's processes, signalling siblings, flooding stdout and stderr, closing or
duplicating inherited descriptors, a huge output) runs in a JSONL source with ``--jobs 2``, an
honest candidate (a reference solution) after each, so that every fault has a sibling in flight.
Each run must give the fault the verdict its docstring expects, every honest candidate
``passed``, no ``harness_error`` (and no exit code 3), and leave no process and no file outside
(tests/test_exploits.py says how both are found).  The faults are batched into a few runs to keep
this under a few minutes on two cores; hangs run with short limits.

Also: a candidate that rewrites the run's store (results of earlier candidates, resumed into the
same folder) must leave it as it was.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from kbx.suite.verdict import Verdict
from tests.conftest import JOBS2
from tests.test_exploits import EXPLOITS, ROOT, Run, expectation, kbx_eval, task_file, watched

REFERENCE = ROOT / "solutions" / "reference"
HONEST = [REFERENCE / "Activation" / "relu.py", REFERENCE / "Math" / "rsqrt.py"]

# name: corpus file; each run: (its faults, --timeout-s)
FAULTS = {
    "segfault": "segfault/Activation/gelu.py",
    "abort": "abort/Activation/gelu.py",
    "os_exit_at_import": "os_exit_at_import/Activation/gelu.py",
    "host_oom": "memory_bomb/Activation/gelu.py",
    "fork_bomb": "fork_bomb/Activation/gelu.py",
    "setsid_orphan": "setsid_orphan/Activation/gelu.py",
    "write_tmp": "write_outside/Activation/gelu.py",
    "write_home": "write_outside/Activation/relu.py",
    "write_source": "write_outside/Math/rsqrt.py",
    "write_shm": "write_outside/Activation/sigmoid.py",
    "network": "network/Activation/gelu.py",
    "stdout_flood": "stdout_flood/Activation/gelu.py",
    "stderr_flood": "stderr_flood/Activation/gelu.py",
    "close_fds": "close_fds/Activation/gelu.py",
    "dup_fds": "dup_fds/Activation/gelu.py",
    "huge_output": "huge_output/Activation/gelu.py",
    "hang_in_c": "hang_in_c/Activation/gelu.py",
    "busy_loop": "busy_loop/Activation/gelu.py",
    "kill_parent": "kill_parent/Activation/gelu.py",
    "kill_forkserver": "kill_forkserver/Activation/gelu.py",
    "kill_group": "kill_group/Activation/gelu.py",
    "signal_siblings": "kill_siblings/Activation/gelu.py",
}
RUNS = {
    "crashes": (
        ["segfault", "abort", "os_exit_at_import", "host_oom", "close_fds", "dup_fds"]
        + ["huge_output", "stdout_flood", "stderr_flood"],
        8,
    ),
    "escapes": (
        ["fork_bomb", "setsid_orphan", "write_tmp", "write_home", "write_source", "write_shm"]
        + ["network"],
        8,
    ),
    "hangs": (["hang_in_c", "busy_loop"], 3),
    "kills": (["signal_siblings", "kill_forkserver", "kill_group", "kill_parent"], 8),
}
CASES = [(run, fault) for run, (faults, _) in RUNS.items() for fault in faults]


def jsonl_line(path: Path) -> str:
    return json.dumps({"predict": path.read_text(), "file": task_file(path)}) + "\n"


def write_source(path: Path, faults: list[str]) -> dict[str, str]:
    """A JSONL of the faults, an honest candidate after each; its lines' expected verdicts, by
    source (``path:line``)."""
    lines, expected = [], {}
    for i, fault in enumerate(faults):
        for candidate, verdict in (
            (EXPLOITS / FAULTS[fault], expectation(EXPLOITS / FAULTS[fault])),
            (HONEST[i % len(HONEST)], Verdict.PASSED.value),
        ):
            lines.append(jsonl_line(candidate))
            expected[f"{path}:{len(lines)}"] = verdict
    path.write_text("".join(lines))
    return expected


class FaultRun:
    def __init__(self, run: Run, expected: dict[str, str], faults: list[str]) -> None:
        self.run, self.expected, self.faults = run, expected, faults

    def record(self, index: int) -> dict[str, Any] | None:
        """The record of line ``index`` (1-based)."""
        source = list(self.expected)[index - 1]
        return self.run.records.get(source)


_runs: dict[str, FaultRun] = {}  # each run once per session, shared by its tests


def get_run(name: str, tmp_path_factory: pytest.TempPathFactory) -> FaultRun:
    if name not in _runs:
        faults, timeout_s = RUNS[name]
        folder = tmp_path_factory.mktemp(f"faults-{name}")
        source = folder / f"{name}.jsonl"
        expected = write_source(source, faults)
        run = Run(folder / "run")
        with watched(run):
            code, log = kbx_eval(
                source,
                run.out,
                "--device",
                "cpu",
                "--config",
                str(JOBS2),
                "--timeout-s",
                str(timeout_s),
            )
            run.returncodes.append(code)
            run.logs.append(log)
        _runs[name] = FaultRun(run, expected, faults)
    return _runs[name]


@pytest.mark.parametrize(("run_name", "fault"), CASES, ids=[f"{r}-{f}" for r, f in CASES])
def test_fault_gets_its_own_verdict(tmp_path_factory, run_name: str, fault: str):
    fr = get_run(run_name, tmp_path_factory)
    line = 2 * fr.faults.index(fault) + 1
    record = fr.record(line)
    assert record is not None, fr.run.why_missing()
    assert record["verdict"] == expectation(EXPLOITS / FAULTS[fault]), record["detail"]


@pytest.mark.parametrize("run_name", list(RUNS))
def test_honest_candidates_beside_faults_pass(tmp_path_factory, run_name: str):
    fr = get_run(run_name, tmp_path_factory)
    wrong = []
    for i, fault in enumerate(fr.faults):
        record = fr.record(2 * i + 2)
        got = (record["verdict"], record["detail"]) if record else ("no record", "")
        if got[0] != Verdict.PASSED:
            wrong.append(f"the honest candidate after {fault}: {got[0]} ({got[1][:200]})")
    assert not wrong, wrong


@pytest.mark.parametrize("run_name", list(RUNS))
def test_faults_are_no_harness_error(tmp_path_factory, run_name: str):
    fr = get_run(run_name, tmp_path_factory)
    assert fr.run.returncodes[0] != 3, "kbx eval exited 3 (harness errors)"
    assert fr.run.returncodes[0] == 0, fr.run.why_missing()
    errors = [r for r in fr.run.records.values() if r["verdict"] == Verdict.HARNESS_ERROR]
    assert not errors, [r["detail"] for r in errors]


@pytest.mark.parametrize("run_name", list(RUNS))
def test_faults_leave_nothing_behind(tmp_path_factory, run_name: str):
    fr = get_run(run_name, tmp_path_factory)
    assert not fr.run.left, fr.run.left
    assert not fr.run.files, fr.run.files


# --- the results store -----------------------------------------------------------------------


def store_state(out: Path) -> dict[str, Any]:
    db = sqlite3.connect(f"file:{out / 'kbx.sqlite'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT key, verdict, record FROM results ORDER BY seq").fetchall()
    finally:
        db.close()
    return {key: (verdict, json.loads(record)["verdict"]) for key, verdict, record in rows}


def test_rewriting_the_store_changes_no_earlier_verdict(tmp_path: Path):
    """Run 1 evaluates a mismatching candidate into DIR; run 2 resumes into DIR with a candidate
    that looks for DIR's store and rewrites the verdicts of "victim" sources to passed.  The
    first verdict must still be mismatch in the store, results.jsonl and summary.json."""
    source = tmp_path / "victim.jsonl"
    source.write_text(jsonl_line(ROOT / "tests" / "bad" / "mismatch" / "Activation" / "gelu.py"))
    run = Run(tmp_path / "run")
    with watched(run):
        code, log = kbx_eval(source, run.out, "--device", "cpu", "--config", str(JOBS2))
        assert code == 0, log[-2000:]
        first = store_state(run.out)
        assert [v for v, _ in first.values()] == ["mismatch"], first
        with source.open("a") as f:  # the same source with one more line: resumed, not redone
            f.write(jsonl_line(EXPLOITS / "rewrite_store" / "Activation" / "gelu.py"))
        code, log = kbx_eval(source, run.out, "--device", "cpu", "--config", str(JOBS2))
        run.returncodes.append(code)
        run.logs.append(log)
    after = store_state(run.out)
    assert {k: after.get(k) for k in first} == first, "the store changed"
    records = [json.loads(x) for x in (run.out / "results.jsonl").read_text().splitlines()]
    victim = [r for r in records if r["source"].endswith("victim.jsonl:1")]
    assert [r["verdict"] for r in victim] == ["mismatch"], victim
    summary = json.loads((run.out / "summary.json").read_text())
    assert summary["counts"].get("mismatch") == 1, summary["counts"]
    exploit = [r for r in records if r["source"].endswith("victim.jsonl:2")]
    expected = expectation(EXPLOITS / "rewrite_store" / "Activation" / "gelu.py")
    assert [r["verdict"] for r in exploit] == [expected], exploit
    assert not run.files, run.files  # its marker beside the store
    assert not run.left, run.left
