"""The only place the stages are chained: read, run in the sandbox, check, time."""

from __future__ import annotations

from kbx.candidate import Candidate
from kbx.config import EvalConfig
from kbx.evaluate import check, sandbox, timing
from kbx.evaluate.childenv import settings
from kbx.evaluate.context import Context
from kbx.evaluate.outcome import Outcome
from kbx.result import Result
from kbx.runtime.gpuops import on_device


def evaluate(candidate: Candidate, cfg: EvalConfig, ctx: Context | None = None) -> Result:
    """Evaluate one candidate in the process's ``ctx`` (None: one of its own, children from
    fresh interpreters); every outcome, kbx's own faults included, is a Result."""
    ctx = ctx or Context()
    with Outcome(candidate, cfg, ctx.refs) as out:
        task, child_cfg = out.read(), settings(cfg)
        lock, device, timed = child_cfg.lock, cfg.device, cfg.timed
        timing.prefetch(task, cfg, lock)  # measured while the candidate runs
        ctx.refs.prefetch(task, device, lock, cfg.gpu, timed, cfg.tuning.ahead_bytes)  # likewise
        out.enter("import")
        out.ran(child := sandbox.run_child(task, candidate.code, child_cfg, ctx.servers))
        out.enter("check")
        with on_device(cfg.gpu if device == "cuda" else None):
            spent: dict[str, float] = {}
            outputs, variants = child.outputs, child.variants
            waited = check.judge(task, outputs, device, lock, spent, variants, ctx.refs)
            out.judged(waited, spent)
            if timed:
                out.enter("perf")
                timing.against_baselines(task, child.timings, lock, cfg, out.result)
        out.result.task_version = task.version
    return out.result
