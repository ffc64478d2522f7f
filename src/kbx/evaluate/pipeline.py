"""The only place the stages are chained: read, wait for room on the GPU, run in the sandbox,
check, time."""

from __future__ import annotations

from kbx.core.candidate import Candidate
from kbx.core.config import EvalConfig
from kbx.core.result import Result
from kbx.evaluate import check, room, timing
from kbx.evaluate.context import Context
from kbx.evaluate.outcome import Outcome
from kbx.gpu.gpuops import on_device
from kbx.sandbox import spawn
from kbx.sandbox.childenv import settings
from kbx.sandbox.wire.job import ChildConfig
from kbx.suite.task import Task


def evaluate(candidate: Candidate, cfg: EvalConfig, ctx: Context | None = None) -> Result:
    """Evaluate one candidate in the process's ``ctx`` (None: one of its own, children from
    fresh interpreters); every outcome, kbx's own faults included, is a Result."""
    ctx = ctx or Context()
    with Outcome(candidate, cfg, ctx.refs) as out:
        task, child_cfg = out.read(), settings(cfg)
        with room.for_job(task, child_cfg.place, out.waited):  # while the GPU is full: waits
            stages(out, task, candidate, cfg, child_cfg, ctx)
        out.result.task_version = task.version
    return out.result


def stages(
    out: Outcome,
    task: Task,
    candidate: Candidate,
    cfg: EvalConfig,
    child_cfg: ChildConfig,
    ctx: Context,
) -> None:
    """Run in the sandbox, check, time: a ``Reject`` ends them with the candidate's verdict."""
    place = child_cfg.place
    timing.prefetch(task, cfg, place)  # measured while the candidate runs
    ctx.refs.prefetch(task, place, cfg.tuning.ahead_bytes)  # likewise
    out.enter("import")
    child = spawn.run_child(task, candidate.code, child_cfg, ctx.servers, out.doing)
    out.ran(child)
    out.enter("check")
    with on_device(place.current):
        spent: dict[str, float] = {}
        outputs, variants = child.outputs, child.variants
        waited = check.judge(task, outputs, place, spent, variants, ctx.refs)
        out.judged(waited, spent)
        if place.timed:
            out.enter("perf")
            with room.covered(place):  # its baselines: paid for by the job's reservation
                timing.against_baselines(task, child.timings, place, cfg, out.result)
