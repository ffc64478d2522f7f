"""What a method sees of a result: methods.md 7.0's fields, and never the reference's values."""

from __future__ import annotations

from kbx.core.candidate import make
from kbx.core.result import Result
from kbx.generate.feedback import Feedback, feedback
from kbx.run.evaluator import Evaluator
from kbx.suite.verdict import Verdict
from tests.generate.conftest import reference


def identity() -> str:
    """kbx's abs kernel with the abs taken out: it runs, and its values mismatch."""
    return reference("Math/abs").replace("tl.abs(x)", "x")


def test_a_mismatch_shows_the_summary_without_the_references_values(evaluator: Evaluator) -> None:
    result = evaluator.evaluate("Math/abs", identity())
    assert result.verdict == Verdict.MISMATCH and "expected" in result.detail
    fb = feedback(result)
    assert fb.verdict == "exe_fail" and fb.call_ok and not fb.exe_ok and not fb.perf_ok
    assert "differ" in fb.error_text and "got" in fb.error_text
    assert "expected" not in fb.error_text
    assert set(Feedback.model_fields) == {
        "verdict", "kbx_verdict", "stage", "call_ok", "exe_ok", "perf_ok", "error_text", "speedup"
    }  # fmt: skip


def result(verdict: Verdict, stage: str, detail: str = "", speedup: float | None = None) -> Result:
    out = Result.of(make("t", "Math/abs", "x = 1\n"), "cuda", verdict, detail, stage)
    out.speedup = speedup
    return out


def test_every_verdict_maps_to_a_feedback_class() -> None:
    cases = {
        (Verdict.NO_CODE, "read"): "empty",
        (Verdict.NO_ENTRY, "import"): "entry_missing",
        (Verdict.IMPORT_FAILED, "import"): "call_fail",
        (Verdict.RUNTIME_ERROR, "run"): "call_fail",
        (Verdict.WRONG_SHAPE, "check"): "exe_fail",
        (Verdict.NO_TRITON, "run"): "contract_fail",
        (Verdict.TOO_FAST, "perf"): "perf_fail",
        (Verdict.TIMEOUT, "perf"): "perf_fail",
        (Verdict.TIMEOUT, "run"): "call_fail",
        (Verdict.HARNESS_ERROR, "run"): "harness_error",
    }
    for (verdict, stage), want in cases.items():
        assert feedback(result(verdict, stage)).verdict == want, verdict


def test_a_pass_gives_its_speedup_and_no_error_text() -> None:
    fb = feedback(result(Verdict.PASSED, "done", "all 5 cases match", 1.7))
    assert (fb.verdict, fb.perf_ok, fb.speedup, fb.error_text) == ("ok", True, 1.7, "")
    assert not feedback(result(Verdict.PASSED, "done")).perf_ok  # CPU: correct, not timed


def test_the_error_text_is_the_tail() -> None:
    fb = feedback(result(Verdict.RUNTIME_ERROR, "run", "x" * 5000 + "the end"))
    assert len(fb.error_text) == 2000 and fb.error_text.endswith("the end")
