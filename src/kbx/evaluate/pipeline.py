"""The only place the stages are chained: read, run in the sandbox, check, time."""

from __future__ import annotations

from kbx.core.candidate import Candidate
from kbx.core.config import EvalConfig
from kbx.core.result import Result
from kbx.evaluate import check, timing
from kbx.evaluate.context import Context
from kbx.evaluate.outcome import Outcome
from kbx.gpu.gpuops import on_device
from kbx.sandbox import spawn
from kbx.sandbox.childenv import settings


def evaluate(candidate: Candidate, cfg: EvalConfig, ctx: Context | None = None) -> Result:
    """Evaluate one candidate in the process's ``ctx`` (None: one of its own, children from
    fresh interpreters); every outcome, kbx's own faults included, is a Result."""
    ctx = ctx or Context()
    with Outcome(candidate, cfg, ctx.refs) as out:
        task, child_cfg = out.read(), settings(cfg)
        place = child_cfg.place
        timing.prefetch(task, cfg, place)  # measured while the candidate runs
        ctx.refs.prefetch(task, place, cfg.tuning.ahead_bytes)  # likewise
        out.enter("import")
        out.ran(child := spawn.run_child(task, candidate.code, child_cfg, ctx.servers))
        out.enter("check")
        with on_device(place.current):
            spent: dict[str, float] = {}
            outputs, variants = child.outputs, child.variants
            waited = check.judge(task, outputs, place, spent, variants, ctx.refs)
            out.judged(waited, spent)
            if place.timed:
                out.enter("perf")
                timing.against_baselines(task, child.timings, place, cfg, out.result)
        out.result.task_version = task.version
    return out.result
