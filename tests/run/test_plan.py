"""A run folder records the resolved configuration it ran with, beside its results; a run
starts its longest tasks first, on a fresh machine too."""

import json

from kbx.cli import main
from kbx.core.candidate import Candidate
from kbx.run.plan import expected, longest_first, prior
from kbx.suite import load_suite
from tests.conftest import REFERENCE


def test_the_run_folder_and_its_summary_record_the_resolved_configuration(tmp_path):
    source = tmp_path / "src" / "Math"
    source.mkdir(parents=True)
    (source / "abs.py").write_text((REFERENCE / "Math" / "abs.py").read_text())
    config = tmp_path / "kbx.toml"
    config.write_text("jobs = 1\n\n[limits]\ncase_s = 90\n")
    out = tmp_path / "run"
    argv = ["eval", str(source.parent), "--device", "cpu", "--out", str(out)]
    code = main([*argv, "--config", str(config), "--timeout-s", "75"])
    assert code == 0
    written = json.loads((out / "config.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"] == written
    assert written["device"] == "cpu" and written["perf"] is False
    tuning = written["tuning"]
    assert tuning["jobs"] == 1 and tuning["fork_server"] is True
    assert tuning["limits"]["case_s"] == 75.0  # --timeout-s over the file's 90
    assert tuning["limits"]["import_s"] == 75.0 and tuning["limits"]["setup_s"] == 180.0


def test_a_bad_configuration_file_is_one_line_naming_the_key(tmp_path, capsys):
    config = tmp_path / "kbx.toml"
    config.write_text('jobs = "many"\n')
    argv = ["eval", str(REFERENCE), "--device", "cpu", "--out", str(tmp_path / "run")]
    assert main([*argv, "--config", str(config)]) == 2
    err = capsys.readouterr()
    text = err.out + err.err
    assert "kbx.toml" in text and "'jobs'" in text and "Traceback" not in text
    assert not (tmp_path / "run").exists()


def test_a_machine_without_job_times_orders_by_the_packaged_ones_scaled_to_its_own():
    packaged = {"Math/add": 2.0, "LinearAlgebra/det": 40.0, "Fusion/big": 100.0}
    todo = [Candidate(f"s/{t}", t, "x") for t in ("Math/add", "Loss/new", "Fusion/big")]
    fresh = expected({}, packaged)
    assert fresh == packaged
    order = [c.task_id for c in longest_first(todo, fresh)]
    assert order == ["Fusion/big", "Loss/new", "Math/add"]  # unknown: the median, 40 s
    # twice as slow here on the two tasks this machine knows: the rest scaled alike, its own kept
    mine = expected({"Math/add": 4.0, "LinearAlgebra/det": 80.0, "Loss/new": 500.0}, packaged)
    assert mine == {
        "Math/add": 4.0,
        "LinearAlgebra/det": 80.0,
        "Fusion/big": 200.0,
        "Loss/new": 500.0,
    }
    assert [c.task_id for c in longest_first(todo, mine)] == ["Loss/new", "Fusion/big", "Math/add"]


def test_the_packaged_job_times_cover_every_task():
    assert set(prior()) == set(load_suite())
