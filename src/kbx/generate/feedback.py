"""What a method may learn from the evaluator (methods.md 7.0): the stage reached, a verdict
class, the tail of the error text, a mismatch summary and the speedup; never the reference's
outputs.  A mismatch's "expected <value>" is cut from the detail before a method sees it.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from kbx.core.result import Result
from kbx.suite.verdict import Verdict

FeedbackVerdict = Literal[
    "empty", "entry_missing", "call_fail", "exe_fail", "contract_fail", "perf_fail", "ok",
    "harness_error",
]  # fmt: skip
ERROR_TAIL = 2000
STAGES = ("read", "import", "run", "check", "perf", "done")
CLASS: dict[Verdict, FeedbackVerdict] = {
    Verdict.PASSED: "ok",
    Verdict.NO_CODE: "empty",
    Verdict.UNREADABLE: "empty",
    Verdict.UNKNOWN_TASK: "empty",
    Verdict.NO_ENTRY: "entry_missing",
    Verdict.WRONG_SHAPE: "exe_fail",
    Verdict.WRONG_DTYPE: "exe_fail",
    Verdict.MISMATCH: "exe_fail",
    Verdict.NO_TRITON: "contract_fail",
    Verdict.FORBIDDEN: "contract_fail",
    Verdict.TOO_FAST: "perf_fail",
    Verdict.HARNESS_ERROR: "harness_error",
}
# the reference's value at the worst element (kbx.suite.compare.summarize): cut
EXPECTED = re.compile(r",? expected [-+]?(?:nan|inf|\d[\d.]*(?:e[-+]?\d+)?)", re.IGNORECASE)


class Feedback(BaseModel):
    model_config = ConfigDict(frozen=True)

    verdict: FeedbackVerdict
    kbx_verdict: str
    stage: str
    call_ok: bool
    exe_ok: bool
    perf_ok: bool
    error_text: str = ""
    speedup: float | None = None

    def summary(self) -> str:
        """The lines a prompt shows."""
        lines = [
            f"runnable test: {'succeed' if self.call_ok else 'failed'}",
            f"correctness test: {'succeed' if self.exe_ok else 'failed'}",
        ]
        if self.error_text:
            lines.append(f"error ({self.kbx_verdict}): {self.error_text}")
        if self.speedup is not None:
            lines.append(f"speedup over PyTorch eager: {self.speedup:.3f}")
        return "\n".join(lines)


def verdict_class(result: Result) -> FeedbackVerdict:
    if result.verdict in CLASS:
        return CLASS[result.verdict]
    return "perf_fail" if result.stage == "perf" else "call_fail"  # a timing timeout: perf


def feedback(result: Result) -> Feedback:
    """The method's view of ``result``."""
    reached = STAGES.index(result.stage) if result.stage in STAGES else 0
    passed = result.verdict == Verdict.PASSED
    text = "" if passed else EXPECTED.sub("", result.detail)[-ERROR_TAIL:]
    speedup = result.speedup if passed and result.speedup is not None else None
    return Feedback(
        verdict=verdict_class(result),
        kbx_verdict=str(result.verdict),
        stage=result.stage,
        call_ok=reached >= STAGES.index("check"),
        exe_ok=reached >= STAGES.index("perf"),
        perf_ok=passed and speedup is not None,
        error_text=text,
        speedup=speedup,
    )
