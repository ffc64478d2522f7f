"""The command line: tasks, show, eval and report."""

import json

from kbx.cli import main
from tests.conftest import BAD


def test_tasks_json_lists_ids_categories_entries(capsys):
    assert main(["tasks", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and {"id", "category", "entry", "paper"} <= set(rows[0])
    assert any(r["id"] == "Activation/gelu" and r["entry"] == "gelu" for r in rows)


def test_tasks_by_category(capsys):
    assert main(["tasks", "--category", "Activation", "--json"]) == 0
    assert {r["category"] for r in json.loads(capsys.readouterr().out)} == {"Activation"}


def test_show_prints_the_contract(capsys):
    assert main(["show", "Activation/gelu"]) == 0
    out = capsys.readouterr().out
    assert "gelu(input" in out and "precision" in out and "benchmark cases" in out
    assert main(["show", "Nope/nope"]) == 2


def test_eval_then_report(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["eval", str(BAD / "no_triton"), "--device", "cpu", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"] == {"no_triton": len(list((BAD / "no_triton").rglob("*.py")))}
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert "no_triton" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "missing")]) == 2
    (out / "results.jsonl").unlink()  # as if the run had been stopped before its export
    assert main(["report", str(out)]) == 0
    assert "no_triton" in capsys.readouterr().out


def test_eval_missing_source(tmp_path):
    assert main(["eval", str(tmp_path / "nothing.jsonl"), "--device", "cpu"]) == 2


def test_eval_measures_baselines_first_unless_the_configuration_says_not(tmp_path):
    from kbx.core.config import load_tuning

    assert load_tuning(None).baselines_first
    config = tmp_path / "kbx.toml"
    config.write_text("baselines_first = false\n")
    assert not load_tuning(config).baselines_first


def test_cuda_without_a_gpu_is_one_line_and_exit_2(tmp_path, capsys):
    """Issue 25's newcomer path: no tracebacks, no 67 s of failing children."""
    import torch

    if torch.cuda.is_available():  # the message is for machines without one
        return
    for argv in (
        ["eval", str(BAD / "no_triton"), "--device", "cuda", "--out", str(tmp_path)],
        ["validate", "--device", "cuda", "--tasks", "Math/rsqrt"],
    ):
        assert main(argv) == 2
        out = capsys.readouterr().out
        assert "no CUDA GPU is visible here" in out and "Traceback" not in out


def test_torchs_warnings_about_a_tasks_own_reference_stay_off_the_terminal():
    """kl_div's reference with ``reduction='mean'`` makes torch warn from the task file: kbx drops
    that warning (the suite's, not the user's), and no other."""
    import warnings

    import torch

    from kbx.cli import quiet_references
    from kbx.suite import find

    task = find("Loss/kl_div")
    x, y = torch.randn(4, 5).log_softmax(-1), torch.randn(4, 5).softmax(-1)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        task.reference(x, y, reduction="mean")
        assert [w.category for w in seen] == [UserWarning]
        quiet_references()
        task.reference(x, y, reduction="mean")
        warnings.warn("a user's warning", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen][1:] == ["a user's warning"]
