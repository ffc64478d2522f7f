"""Library entry point: evaluate one candidate from Python (generation loops, RL rewards).

    from kbx.api import evaluate_code
    result = evaluate_code("Math/rsqrt", code, device="cpu")
    result.verdict, result.detail, result.speedup

Each call opens an ``Evaluator`` for one candidate (sandboxed child, trusted comparison, timing
on the GPU); to evaluate many, keep one ``kbx.Evaluator`` open and submit to it.
"""

from __future__ import annotations

from pathlib import Path

from kbx.core.config import Tuning
from kbx.core.result import Result
from kbx.run.evaluator import DEFAULT, Evaluator


def evaluate_code(
    task_id: str,
    code: str,
    device: str | None = None,
    perf: bool = True,
    run_dir: Path | None = None,
    tuning: Tuning | None = None,
    baselines: Path | None = DEFAULT,
) -> Result:
    """The verdict (and on the GPU the speedup) of ``code`` for the task ``task_id``.

    ``code`` may be a raw model answer: fences, chat end tokens and a KernelBench-X test block
    are stripped as for JSONL sources.  A device that cannot run here raises ``ValueError``.
    """
    one = (tuning or Tuning()).model_copy(update={"jobs": 1})
    with Evaluator(device, perf=perf, run_dir=run_dir, tuning=one, baselines=baselines) as ev:
        return ev.evaluate(task_id, code)
