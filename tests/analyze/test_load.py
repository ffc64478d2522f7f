"""Loading kbx run folders and KernelBench-X metrics folders over the full suite."""

import json

import pandas as pd

from kbx.analyze import load

SUITE = pd.Series(["Math", "Math", "Fusion"], index=["Math/add", "Math/cos", "Fusion/f1"])


def record(task, verdict="passed", stage="done", speedup=2.0, **meta):
    cases = [{"kernel_ms": 1.0, "eager_ms": 2.0}] if speedup else []
    return {
        "task_id": task,
        "verdict": verdict,
        "stage": stage,
        "speedup": speedup,
        "cases": cases,
        "fingerprint": {"gpu": "NVIDIA H200"},
        "meta": meta,
        "ran": stage in ("check", "perf", "done"),
        "correct": stage in ("perf", "done"),
    }


def write_run(folder, records):
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def test_kbx_run_is_completed_over_the_suite(tmp_path):
    run = write_run(
        tmp_path / "geak",
        [
            record("Math/add", method="geak", round=1),
            record("Fusion/f1", "mismatch", "check", None, method="geak", round=1),
            record("Other/x", method="geak", round=1),
        ],
    )
    table = load.load([run], SUITE)
    assert len(table) == 3 and set(table["method"]) == {"geak"} and set(table["round"]) == {1}
    rows = table.set_index("task_id")
    assert rows.loc["Math/add", "perf_ok"] and rows.loc["Math/add", "speedup"] == 2.0
    assert rows.loc["Fusion/f1", "call_ok"] and not rows.loc["Fusion/f1", "exe_ok"]
    assert rows.loc["Math/cos", "verdict"] == load.MISSING and not rows.loc["Math/cos", "call_ok"]
    assert rows.loc["Math/add", "gpu"] == "NVIDIA H200"
    assert table.attrs["unknown_tasks"] == ["Other/x"]


def test_method_defaults_to_the_folder_and_a_passed_duplicate_wins(tmp_path):
    """A task with several candidates of one run passes when one of them passed, as in the eval
    table and summary.json (kbx.core.passrate); otherwise its last record counts."""
    twice = [record("Math/add"), record("Math/add", "timeout", "run", None)]
    twice += [
        record("Math/cos", "mismatch", "check", None),
        record("Math/cos", "timeout", "run", None),
    ]
    rows = load.load([write_run(tmp_path / "claude", twice)], SUITE).set_index("task_id")
    assert (
        rows.loc["Math/add", "method"] == "claude" and rows.loc["Math/add", "verdict"] == "passed"
    )
    assert rows.loc["Math/cos", "verdict"] == "timeout"


def test_released_metrics_tree(tmp_path):
    metrics = {
        "Math/add.py": {
            "call_ok": True,
            "exe_ok": True,
            "perf_ok": True,
            "speedup": 1.5,
            "runtime_ms": 9.0,
            "gbs": 10.0,
            "tflops": "N/A",
            "performance": [{"ms": 1.0}, {"ms": 3.0}],
        },
        "Math/cos.py": {
            "call_ok": True,
            "exe_ok": False,
            "perf_ok": False,
            "speedup": "N/A",
            "performance": [],
        },
    }
    for gpu in ("4090", "h800"):
        (tmp_path / gpu / "geak").mkdir(parents=True)
        (tmp_path / gpu / "geak" / "metrics.json").write_text(json.dumps(metrics))
    table = load.load([tmp_path], SUITE)
    assert len(table) == 6 and set(table["gpu"]) == {"4090", "h800"}
    add = table[(table["task_id"] == "Math/add") & (table["gpu"] == "4090")].iloc[0]
    assert add["kernel_ms"] == 4.0 and add["eager_ms"] == 6.0 and add["perf_ok"]
    cos = table[table["task_id"] == "Math/cos"].iloc[0]
    assert cos["verdict"] == "exe_fail" and not cos["exe_ok"]
    assert not table[table["task_id"] == "Fusion/f1"]["call_ok"].any()


def test_empty_input_and_suite():
    assert load.load([], SUITE).empty
    suite = load.suite_tasks()
    assert len(suite) == 184 and suite["Math/add"] == "Math"


def test_parquet_round_trip(tmp_path):
    table = load.load([write_run(tmp_path / "m", [record("Math/add")])], SUITE)
    load.save(table, tmp_path / "t.parquet")
    assert len(pd.read_parquet(tmp_path / "t.parquet")) == 3
