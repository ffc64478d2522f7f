"""One candidate's outcome as the stages run: where it is, how long each stage took, the Result.

The pipeline names each stage it enters; ``Outcome`` keeps the clock and turns every way the
stages can end into a Result: a ``Reject`` becomes the candidate's verdict at the stage it
happened in, any other exception is kbx's own fault (``harness_error``, with file and line) and
never blamed on the candidate.
"""

from __future__ import annotations

import time
import traceback
from pathlib import Path
from types import TracebackType

from kbx.core import incidents
from kbx.core.activity import BOARD
from kbx.core.candidate import Candidate
from kbx.core.config import EvalConfig
from kbx.core.result import Result
from kbx.evaluate.references import References
from kbx.gpu.hardware import fingerprint
from kbx.sandbox import confine
from kbx.sandbox.spawn import ChildRun
from kbx.suite import find
from kbx.suite.task import Task
from kbx.suite.verdict import Reject, Verdict

EARLY = (Verdict.IMPORT_FAILED, Verdict.NO_ENTRY, Verdict.HARNESS_ERROR)  # of the import stage
KEYS = {"read": "start", "check": "check", "perf": "baselines"}  # stage -> its ``stage_s`` key
STEPS = {"read": "reading", "import": "setting up", "check": "check", "perf": "timing"}


def label(candidate: Candidate) -> str:
    """The candidate in progress lines: its task, and its source where that names a line of a
    file (many candidates of one task)."""
    source = candidate.source.rsplit("/", 1)[-1]
    return f"{candidate.task_id} ({source})" if ":" in source else candidate.task_id


class Outcome:
    """A context manager around the stages of one candidate; ``result`` after it ends."""

    def __init__(self, candidate: Candidate, cfg: EvalConfig, refs: References) -> None:
        self.candidate, self.cfg, self.refs = candidate, cfg, refs
        self.stage, self.entered = "read", time.monotonic()
        self.started, self.started_at = self.entered, time.time()
        self.result = Result.of(candidate, cfg.device, Verdict.PASSED, "", "done")
        self.task: Task | None = None
        self.token = BOARD.begin(label(candidate), STEPS["read"])

    def read(self) -> Task:
        """The read stage: the candidate's task, or the reason it has none."""
        if problem := unreadable(self.candidate):
            raise Reject(*problem)
        task = find(self.candidate.task_id)
        assert task is not None
        self.task = task
        return task

    def enter(self, stage: str) -> None:
        """The next stage begins; the time since the last one is the last one's."""
        now = time.monotonic()
        if self.stage in KEYS:  # the child's stage is timed in detail by the sandbox
            self.spent(KEYS[self.stage], now - self.entered)
        self.stage, self.entered = stage, now
        self.doing(STEPS.get(stage, stage))

    def doing(self, step: str) -> None:
        """Where the candidate is, finer than its stage (the child's: ``cases 2``), for progress
        lines (``kbx.core.activity``)."""
        BOARD.step(self.token, step)

    def waited(self, step: str, seconds: float) -> None:
        """A wait outside the stages (``room.for_job``): ``step`` while it lasts, then its
        seconds in ``stage_s`` (``memory_wait``)."""
        if step:
            self.doing(step)
        else:
            self.spent("memory_wait", seconds)
            self.doing(STEPS.get(self.stage, self.stage))

    def spent(self, key: str, seconds: float) -> None:
        self.result.stage_s[key] = round(self.result.stage_s.get(key, 0.0) + seconds, 3)

    def ran(self, child: ChildRun) -> None:
        """What the sandbox stage measured and checked, kept in the result."""
        self.result.stage_s.update(child.stage_s)
        self.result.checked = child.checked
        self.result.triton_share = child.triton_share
        done, total = child.checked.get("bench", 0), child.checked.get("bench_total", 0)
        self.result.detail = "all cases match"
        if done != total:
            self.result.detail += f"; benchmark sizes not checked ({done} of {total} checked)"

    def judged(self, waited_s: float, spent: dict[str, float]) -> None:
        """The check stage's queueing for the GPU and its time per kind of output."""
        self.spent("check_wait", waited_s)
        for kind, seconds in spent.items():
            self.spent(f"check_{kind}", seconds)

    def __enter__(self) -> Outcome:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        BOARD.end(self.token)
        if isinstance(exc, Reject):
            self.fail(exc.verdict, exc.detail, self.refined(exc))
        elif isinstance(exc, Exception):
            where = traceback.extract_tb(tb)[-1]
            detail = f"{type(exc).__name__}: {exc} ({Path(where.filename).name}:{where.lineno})"
            trace = incidents.trace_of(kind, exc, tb)
            kept = incidents.save(f"harness-{self.candidate.task_id}", trace)
            self.fail(Verdict.HARNESS_ERROR, detail + incidents.where(kept), self.stage)
        else:
            self.enter("done")
        if self.task is not None:
            self.refs.forget(self.task)  # what the judge did not take
        self.result.fingerprint = fingerprint(self.cfg.device)
        self.result.sandbox = confine.probe().name
        self.result.duration_s = round(time.monotonic() - self.started, 3)
        self.result.started_at = round(self.started_at, 3)
        return exc is None or isinstance(exc, Exception)

    def fail(self, verdict: Verdict, detail: str, stage: str) -> None:
        kept = dict(self.result.stage_s)
        self.result = Result.of(self.candidate, self.cfg.device, verdict, detail, stage)
        self.result.stage_s = kept

    def refined(self, r: Reject) -> str:
        """Failures inside the child are import-time or run-time: told apart for analysis."""
        if self.stage != "import":
            return self.stage
        return "import" if r.verdict in EARLY else "run"


def unreadable(candidate: Candidate) -> tuple[Verdict, str] | None:
    """Why the read stage ends a candidate before any child runs (its input's problem, or a
    task the suite does not have); None when it goes on."""
    if candidate.problem:
        return candidate.problem
    if find(candidate.task_id) is None:
        return Verdict.UNKNOWN_TASK, f"no task {candidate.task_id!r}"
    return None
