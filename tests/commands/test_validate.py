"""kbx validate: the generic wrong outputs, the degeneracy check, and a run over a few tasks."""

import dataclasses
from pathlib import Path

import pytest
import torch

from kbx.commands.validate import (
    TaskReport,
    check_steps,
    near_constant,
    perturb,
    probe_task,
    validate,
)
from kbx.evaluate.pipeline import EvalConfig
from kbx.evaluate.references import References
from kbx.suite import find, load_suite
from kbx.suite.task import Task
from tests.conftest import SAMPLE
from tests.progress import progress


def test_perturb_changes_one_percent_by_one_percent():
    x = torch.arange(1, 1001, dtype=torch.float32)
    y = perturb(x)
    changed = y != x
    assert int(changed.sum()) == 10
    assert torch.allclose(y[changed] / x[changed], torch.tensor(1.01))


def test_near_constant():
    assert near_constant(torch.full((100,), 3.0))
    assert near_constant(torch.full((100,), 3.0) + 1e-9 * torch.randn(100))
    assert not near_constant(torch.randn(100))
    assert not near_constant(torch.ones(4))  # too small to judge


def test_probes_reject_generic_wrong_outputs_for_gelu():
    report = TaskReport("Activation/gelu")
    probe_task(find("Activation/gelu"), report)
    assert report.ok
    assert set(report.probes.values()) == {"rejected"}


def test_a_loose_tolerance_is_caught(monkeypatch):
    from kbx.suite.task import Tolerance

    loose = dataclasses.replace(
        find("Activation/gelu"), tolerance=Tolerance(0.05, 0.05), id="Activation/gelu_loose"
    )
    report = TaskReport(loose.id)
    probe_task(loose, report)
    assert not report.ok
    assert report.probes["perturbed 1%"] == "ACCEPTED"


def test_every_quantized_task_s_step_holds():
    """A quantized task (``Task.quant``), on every correctness case: one element one step off
    passes, three steps off fails (its generic wrong outputs are still rejected: the whole
    suite's validation below)."""
    refs = References()
    quantized = [t for t in load_suite().values() if t.quant is not None]
    assert {t.id for t in quantized} >= {"Quantization/attention_w8a8", "Activation/gelu_int8"}
    for task in quantized:
        report = TaskReport(task.id)
        check_steps(task, report, refs)
        assert report.ok, (task.id, report.failures)


@pytest.mark.parametrize("size", [0.0, 1e-12])
def test_a_step_below_the_tolerance_everywhere_is_caught(size):
    task = find("Quantization/matmul_w8a8")
    assert task.quant is not None
    broken = dataclasses.replace(task, quant=dataclasses.replace(task.quant, size=lambda i: size))
    report = TaskReport(task.id)
    check_steps(broken, report, References())
    assert report.failures
    assert all("no element where a step exceeds the tolerance" in f for f in report.failures)


def test_validate_runs_reference_through_the_pipeline(tmp_path):
    tasks = [find("Math/rsqrt"), find("Random/rand")]
    reports = validate(tasks, EvalConfig(device="cpu", run_dir=tmp_path), jobs=2)
    assert [r.task_id for r in reports] == ["Math/rsqrt", "Random/rand"]
    assert all(r.ok for r in reports), [r.failures for r in reports]
    assert all(r.probes["reference"] == "passed" for r in reports)
    assert reports[1].probes["noise"] == "exempt"


def test_a_task_of_each_category_validates_on_cpu(tmp_path, capsys):
    """The whole-suite test below on one task of each category (CI's share of it)."""
    assert {t.split("/")[0] for t in SAMPLE} == {t.split("/")[0] for t in load_suite()}
    validates(tmp_path, capsys, [find(t) for t in SAMPLE])


@pytest.mark.slow
def test_the_whole_suite_validates_on_cpu(tmp_path, capsys):
    """`kbx validate --device cpu` over every task: the suite's soundness."""
    validates(tmp_path, capsys, list(load_suite().values()))


def validates(tmp_path: Path, capsys: pytest.CaptureFixture[str], tasks: list[Task | None]):
    """``tasks`` through ``kbx validate`` on the CPU, two at a time, each sound."""
    assert None not in tasks
    step = progress(capsys, "validate", len(tasks))  # minutes: a line every 30 s
    on_done = lambda r: step(f"{r.task_id}: {'ok' if r.ok else 'FAILED'}")
    reports = validate(tasks, EvalConfig(device="cpu", run_dir=tmp_path), jobs=2, on_done=on_done)
    failed = {r.task_id: r.failures for r in reports if not r.ok}
    assert not failed


def test_op_evidence_is_asked_of_candidates_and_not_of_kbx_s_own_reference():
    """``kbx validate`` runs kbx's own reference with the Triton requirement off: its child
    records no op evidence (no profiler sessions), and the parent asks none of it."""
    from kbx.core.config import Limits
    from kbx.sandbox import expect
    from kbx.sandbox.follow import Follower

    task = find("Math/rsqrt")
    plan = expect.expected(task, "cuda", timed=False)

    def follower(triton: bool) -> Follower:
        return Follower(0, plan, Limits(), "cuda", perf=False, triton=triton)

    assert follower(True).ops_expected() == {("cases", i) for i in range(len(task.cases))} | {
        ("bench", i) for i in range(len(task.bench))
    }
    assert follower(False).ops_expected() == set()
