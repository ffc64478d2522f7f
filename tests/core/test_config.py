"""kbx.core.config: tuning read from a TOML file with overrides on top, errors that name the
file and the key, and the resolved configuration as the run folder records it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbx.core.config import ConfigError, EvalConfig, Limits, Tuning, load_tuning


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "kbx.toml"
    path.write_text(text)
    return path


def test_no_file_gives_the_defaults():
    assert load_tuning(None) == Tuning()


def test_a_file_sets_top_level_knobs_and_limits_and_leaves_the_rest_at_their_defaults(tmp_path):
    path = write(
        tmp_path, 'jobs = 3\nspares = 0\ntriton_cache = "/tmp/tc"\n[limits]\ncase_s = 30\n'
    )
    tuning = load_tuning(path)
    assert (tuning.jobs, tuning.spares, tuning.triton_cache) == (3, 0, Path("/tmp/tc"))
    assert tuning.limits.case_s == 30
    assert tuning.limits.import_s == Limits().import_s  # not in the file: the default
    assert tuning.procs is None and tuning.fork_server is True


def test_overrides_go_on_top_of_the_file_and_none_keeps_the_files_value(tmp_path):
    path = write(tmp_path, "jobs = 3\nprocs = 2\n[limits]\ncase_s = 30\n")
    tuning = load_tuning(path, jobs=5, procs=None, limits={"import_s": 10})
    assert (tuning.jobs, tuning.procs) == (5, 2)
    assert (tuning.limits.case_s, tuning.limits.import_s) == (30, 10)  # the tables merge
    assert load_tuning(None, check_threads=3).check_threads == 3


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('jobs = "many"\n', "'jobs'"),
        ("jobs = 0\n", "'jobs'"),  # at least one
        ("job = 2\n", "'job'"),  # no such knob
        ("[limits]\ncase_s = -1\n", "'limits.case_s'"),
        ("[limits]\ncase = 5\n", "'limits.case'"),
        ("limits = 3\n", "'limits'"),
    ],
)
def test_a_wrong_key_or_value_names_the_file_and_the_key(tmp_path, text, key):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_tuning(path)
    assert str(path) in str(err.value) and key in str(err.value)


def test_a_wrong_override_names_the_key_and_no_file():
    with pytest.raises(ConfigError) as err:
        load_tuning(None, spares=-1)
    assert str(err.value).startswith("key 'spares'")


def test_limits_overrides_on_a_file_whose_limits_is_no_table_are_its_error(tmp_path):
    path = write(tmp_path, "limits = 3\n")  # not merged with the overrides: reported, no crash
    with pytest.raises(ConfigError, match="'limits'") as err:
        load_tuning(path, limits={"case_s": 5})
    assert str(path) in str(err.value)


def test_a_missing_file_and_a_file_that_is_not_toml_are_config_errors(tmp_path):
    missing = tmp_path / "nowhere.toml"
    with pytest.raises(ConfigError, match="no such configuration file") as err:
        load_tuning(missing)
    assert str(missing) in str(err.value)
    broken = write(tmp_path, "jobs = = 3\n")
    with pytest.raises(ConfigError, match="not TOML") as err:
        load_tuning(broken)
    assert str(broken) in str(err.value)
    assert issubclass(ConfigError, ValueError)  # callers that catch ValueError still do


def test_the_record_is_json_and_holds_the_whole_tuning(tmp_path):
    tuning = Tuning(jobs=4, triton_cache=tmp_path / "tc", limits=Limits(case_s=9))
    cfg = EvalConfig(device="cuda", baseline_cache=tmp_path / "b.sqlite", tuning=tuning)
    record = json.loads(json.dumps(cfg.record()))  # serialisable as it is
    assert record["device"] == "cuda" and record["perf"] is True
    assert record["baseline_cache"] == str(tmp_path / "b.sqlite")
    assert record["tuning"]["jobs"] == 4 and record["tuning"]["limits"]["case_s"] == 9
    assert Tuning.model_validate(record["tuning"]) == tuning  # nothing lost on the way
    cpu = EvalConfig(device="cpu").record()
    assert cpu["perf"] is False and cpu["baseline_cache"] is None  # the CPU times nothing


def test_a_timeout_replaces_the_import_case_and_timing_limits_only():
    limits = Limits(setup_s=7, lock_s=99)
    timed = limits.with_timeout(30)
    assert (timed.import_s, timed.case_s, timed.timing_s) == (30, 30, 30)
    assert (timed.setup_s, timed.lock_s, timed.bench_cpu_s) == (7, 99, limits.bench_cpu_s)
    assert limits.with_timeout(None) is limits and limits.with_timeout(0) is limits
