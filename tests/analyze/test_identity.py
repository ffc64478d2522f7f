"""Runs keep their identity in ``kbx analyze``: labelled by method and model, never merged
unasked, rates over the tasks attempted with n/a where nothing was, and a report whose title
and subtitle say what was run, checked in headless Chromium for an untimed CPU set and for the
committed GPU records."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from kbx.analyze.report import PLOTS
from kbx.cli import main
from tests.analyze import chromium
from tests.analyze.test_command import write_run
from tests.analyze.test_report import assert_drawn, marks

ROOT = Path(__file__).resolve().parents[2]
GPU_RECORDS = ROOT / "benchmarks" / "results" / "reference-h200.jsonl"
FOUR = {"Math/abs": True, "Math/cos": True, "Math/add": True, "Activation/relu": False}
STARTED = 1796558243.0  # 2026-12-06, UTC


def cpu_record(task: str, ok: bool, **meta: Any) -> dict[str, Any]:
    """A record as `kbx eval --device cpu` writes it: verdict, no timing, a fingerprint."""
    return {
        "task_id": task,
        "verdict": "passed" if ok else "mismatch",
        "device": "cpu",
        "speedup": None,
        "cases": [],
        "fingerprint": {"device": "cpu", "kbx": "0.1.0", "gpu": None},
        "started_at": STARTED,
        "ran": True,
        "correct": ok,
        "meta": meta,
    }


def cpu_run(folder: Path, tasks: dict[str, bool], **meta: Any) -> Path:
    return write_run(folder, [cpu_record(t, ok, **meta) for t, ok in tasks.items()])


def analyze(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["analyze", *argv, "--bootstrap", "50"])
    return code, capsys.readouterr().out


def test_two_models_of_one_method_stay_two_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = cpu_run(tmp_path / "a" / "eval", FOUR, method="autotriton", model="ai9stars/AutoTriton")
    b = cpu_run(tmp_path / "b" / "eval", FOUR, method="autotriton", model="qwen-coder")
    out = tmp_path / "out"
    code, printed = analyze(capsys, str(a), str(b), "--out", str(out))
    assert code == 0, printed
    doc = json.loads((out / "analysis.json").read_text())
    labels = ["autotriton · ai9stars/AutoTriton", "autotriton · qwen-coder"]
    assert doc["report"]["methods"] == labels  # two rows, not their mean
    assert [r["model"] for r in doc["runs"]] == ["ai9stars/AutoTriton", "qwen-coder"]
    assert f"read {labels[0]}: {a}, cpu, 2026-12-06, kbx 0.1.0, 4 of 184" in printed
    assert f"read {labels[1]}: {b}" in printed


def test_two_runs_sharing_a_label_are_refused_unless_pooled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two GEAK runs of one model on disjoint tasks: an error naming both, exit 2; with
    --pool, one run over the union of their tasks."""
    first = dict(list(FOUR.items())[:2])
    second = dict(list(FOUR.items())[2:])
    a = cpu_run(tmp_path / "a", first, method="geak", model="deepseek-chat")
    b = cpu_run(tmp_path / "b", second, method="geak", model="deepseek-chat")
    out = tmp_path / "out"
    code, printed = analyze(capsys, str(a), str(b), "--out", str(out))
    assert code == 2 and not out.exists()
    assert printed.strip() == (
        f"{a} and {b} are both runs of 'geak · deepseek-chat' on cpu: give each a --name to "
        "compare them, or --pool to count them as one run"
    )
    code, printed = analyze(capsys, str(a), str(b), "--out", str(out), "--pool")
    assert code == 0, printed
    (run,) = json.loads((out / "analysis.json").read_text())["runs"]
    assert run["label"] == "geak · deepseek-chat" and run["attempted"] == 4
    assert run["inputs"] == [str(a), str(b)]


def test_a_four_task_run_is_rated_over_its_four_tasks_and_n_a_elsewhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = cpu_run(tmp_path / "run", FOUR, method="claude", model="claude-sonnet-4")
    out = tmp_path / "out"
    code, printed = analyze(capsys, str(run), "--out", str(out))
    assert code == 0, printed
    rows = {line.split("│")[1].strip(): line for line in printed.splitlines() if "│" in line}
    assert re.search(r"│\s+4 of 184 │\s+100\.0% \[100\.0, 100\.0\] │\s+75\.0% .*│\s+n/a │", rows[
        "claude · claude-sonnet-4"
    ])  # fmt: skip
    assert re.search(r"│\s+0 │\s+n/a │\s+n/a │$", rows["Fusion"])  # nothing attempted: n/a
    assert re.search(r"│\s+1 │\s+0\.0% │\s+100\.0% │$", rows["Activation"])
    assert "tasks no method solves: 25.0%" in printed  # 1 of the 4 attempted, not of 184
    doc = json.loads((out / "analysis.json").read_text())
    rates = doc["report"]["rates"]["claude · claude-sonnet-4"]
    assert (rates["exe"]["value"], rates["exe"]["n"], rates["fast_1"]) == (0.75, 4, None)
    assert doc["report"]["by_category"]["Fusion"]["claude · claude-sonnet-4"]["exe_rate"] is None
    assert "4 of 184 tasks attempted" in doc["report"]["subtitle"]
    code, printed = analyze(capsys, str(run), "--out", str(out), "--over", "suite")
    rates = json.loads((out / "analysis.json").read_text())["report"]["rates"]
    assert rates["claude · claude-sonnet-4"]["exe"]["value"] == pytest.approx(3 / 184)


@pytest.fixture(scope="module")
def browser() -> str:
    found = chromium.find()
    assert found, "no chromium found: run `make install` as root, or `apt-get install chromium`"
    return found


def test_the_report_of_an_untimed_cpu_set_in_chromium(tmp_path: Path, browser: str) -> None:
    """No empty axes: the speedup figures of runs that were never timed are n/a, with why."""
    a = cpu_run(tmp_path / "a", FOUR, method="autotriton", model="ai9stars/AutoTriton")
    b = cpu_run(tmp_path / "b", {**FOUR, "Math/abs": False}, method="claude", model="claude-4")
    out = tmp_path / "out"
    assert main(["analyze", str(a), str(b), "--out", str(out), "--bootstrap", "50"]) == 0
    found, dom = marks(browser, out / "report.html")
    assert found["drawn"] == found["plots"] == "2" and found["na"] == str(len(PLOTS) - 2)
    for plot in ("exe-heatmap", "method-rates"):
        assert_drawn(dom, plot)
    untimed = "n/a: no candidate of autotriton · ai9stars/AutoTriton, claude · claude-4 was timed"
    for plot in ("speedups", "fast-p", "slower"):
        assert re.search(rf'id="fig-{plot}".*?<p class="na">{re.escape(untimed)}', dom, re.S)
    title = "kbx analysis: autotriton · ai9stars/AutoTriton vs claude · claude-4"
    assert f"<h1>{title}</h1>" in dom
    subtitle = re.search(r'<p class="subtitle">(.*?)</p>', dom)
    assert subtitle and subtitle.group(1).startswith("cpu · 2026-12-06 · kbx 0.1.0 · ")
    assert "claude · claude-4 4 of 184 tasks attempted" in subtitle.group(1)
    assert "0% [0%, 0%]" not in dom  # fast_1 of an untimed run is n/a, not 0%


def test_the_report_of_the_committed_gpu_records_in_chromium(tmp_path: Path, browser: str) -> None:
    run = tmp_path / "reference"
    run.mkdir()
    shutil.copy(GPU_RECORDS, run / "results.jsonl")
    out = tmp_path / "out"
    assert main(["analyze", str(run), "--out", str(out), "--bootstrap", "50"]) == 0
    found, dom = marks(browser, out / "report.html")
    drawn = ("exe-heatmap", "method-rates", "speedups", "fast-p", "slower")
    assert found["drawn"] == found["plots"] == str(len(drawn)), found
    for plot in drawn:
        assert_drawn(dom, plot)
    subtitle = re.search(r'<p class="subtitle">(.*?)</p>', dom)
    assert subtitle and subtitle.group(1).startswith("NVIDIA H200 · 2026-12-04 · kbx 0.1.0")
    assert "reference 184 of 184 tasks attempted" in subtitle.group(1)
