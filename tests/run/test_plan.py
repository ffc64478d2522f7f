"""A run folder records the resolved configuration it ran with, beside its results."""

import json

from kbx.cli import main
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
