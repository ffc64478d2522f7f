"""`kbx analyze` end to end: run folders in, analysis.json, results.csv, results.parquet and
report.html out; one-line errors with exit 2."""

import json
import random
import shutil
from pathlib import Path

import pandas as pd

from kbx.analyze import load
from kbx.analyze.command import OUTPUTS
from kbx.cli import main

ROOT = Path(__file__).resolve().parents[2]
GPU_RUN = ROOT / "benchmarks" / "results" / "reference-h200.jsonl"


def record(task, ok, speedup, gpu="NVIDIA H200", **meta):
    return {
        "task_id": task,
        "verdict": "passed" if ok else "mismatch",
        "speedup": speedup if ok else None,
        "cases": [{"kernel_ms": 1.0, "eager_ms": speedup}] if ok else [],
        "fingerprint": {"gpu": gpu},
        "meta": meta,
        "ran": True,
        "correct": ok,
    }


def write_run(folder, records):
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def synthetic_pair(tmp_path):
    """A one-shot method on two GPUs and a two-round refinement method, over half the suite
    (the rest are missing, so they count as failures)."""
    rng = random.Random(0)
    tasks = list(load.suite_tasks().index)[::2]
    one, refine = [], []
    for task in tasks:
        ok, s = rng.random() < 0.5, rng.lognormvariate(0, 0.6)
        one.append(record(task, ok, s, method="one-shot"))
        one.append(record(task, ok, s * 0.8, gpu="NVIDIA A100", method="one-shot"))
        first = rng.random() < 0.4
        refine.append(record(task, first, s, method="refine", round=0))
        refine.append(record(task, first or rng.random() < 0.5, s, method="refine", round=1))
    return [write_run(tmp_path / "one-shot", one), write_run(tmp_path / "refine", refine)]


def estimates(node, path="$"):
    """Every dict in the JSON that holds an estimate (a 'value' with bounds), with its path."""
    if isinstance(node, dict):
        if "value" in node and "lo" in node:
            yield path, node
        for k, v in node.items():
            yield from estimates(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from estimates(v, f"{path}[{i}]")


def test_analyze_writes_the_four_files(tmp_path, capsys):
    runs = synthetic_pair(tmp_path / "runs")
    out = tmp_path / "out"
    argv = ["analyze", *map(str, runs), "--out", str(out), "--bootstrap", "200"]
    assert main([*argv, "--kernelbenchx", str(tmp_path / "kbx")]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUTS)
    doc = json.loads((out / "analysis.json").read_text())
    assert doc["n_tasks"] == len(load.suite_tasks())
    stats = doc["statistics"]
    assert {"rates", "category_method", "transitions", "hardware", "deviance"} <= set(stats)
    found = list(estimates(stats))
    assert found and all("n" in e for _, e in found), [p for p, e in found if "n" not in e]
    assert all("n" in t for t in stats.values() if isinstance(t, dict) and "rows" in t)
    report = doc["report"]
    assert report["methods"] == ["one-shot", "refine"]
    assert report["rounds"]["refine"][1]["exe_rate"] >= report["rounds"]["refine"][0]["exe_rate"]
    assert set(report["hardware"]) == {"NVIDIA A100", "NVIDIA H200"}
    table = pd.read_parquet(out / "results.parquet")
    assert len(table) == len(pd.read_csv(out / "results.csv"))
    assert "<svg" in (out / "report.html").read_text()
    printed = capsys.readouterr().out
    assert "Rates per method" in printed and "correct but slower" in printed
    back = load.load(sorted((tmp_path / "kbx").glob("*")), pool=True)  # the export reads back
    assert set(back["method"]) == {"one-shot", "refine"}


def test_analyze_a_committed_gpu_run(tmp_path):
    """The acceptance: the records of an earlier H200 run produce the report."""
    run = tmp_path / "reference-h200"
    run.mkdir()
    shutil.copy(GPU_RUN, run / "results.jsonl")
    out = tmp_path / "out"
    assert main(["analyze", str(run), "--out", str(out), "--bootstrap", "100"]) == 0
    doc = json.loads((out / "analysis.json").read_text())
    rates = doc["report"]["rates"]["reference-h200"]
    assert rates["exe"]["value"] == 1.0 and rates["exe"]["n"] == 184
    assert 0 < rates["fast_1"]["value"] < 1
    assert (out / "report.html").stat().st_size > 10_000


def test_analyze_errors_are_one_line_and_exit_2(tmp_path, capsys):
    out = str(tmp_path / "out")
    assert main(["analyze", str(tmp_path / "nope"), "--out", out]) == 2
    assert "no such file or folder" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    assert main(["analyze", str(tmp_path / "empty"), "--out", out]) == 2
    assert "no results.jsonl" in capsys.readouterr().out
    write_run(tmp_path / "blank", [])
    assert main(["analyze", str(tmp_path / "blank"), "--out", out]) == 2
    assert len(capsys.readouterr().out.strip().splitlines()) == 1


def test_names_label_the_runs_in_order(tmp_path, capsys):
    """`--name` gives the n-th run its method name (two copies of one run become two methods);
    more names than runs is a one-line error."""
    runs = []
    for folder in ("first", "second"):
        (tmp_path / folder).mkdir()
        shutil.copy(GPU_RUN, tmp_path / folder / "results.jsonl")
        runs.append(str(tmp_path / folder))
    out = tmp_path / "out"
    args = ["analyze", *runs, "--out", str(out), "--bootstrap", "50", "--name", "eager-ref"]
    assert main(args) == 0
    doc = json.loads((out / "analysis.json").read_text())
    assert set(doc["report"]["rates"]) == {"eager-ref", "second"}
    assert "eager-ref vs second" in doc["report"]["title"]
    assert main([*args, "--name", "b", "--name", "c"]) == 2
    assert "at most one name per RUN" in capsys.readouterr().out
