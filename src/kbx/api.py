"""Library entry point: evaluate one candidate from Python (generation loops, RL rewards).

    from kbx.api import evaluate_code
    result = evaluate_code("Math/rsqrt", code, device="cuda")
    result.verdict, result.detail, result.speedup

Each call runs the full pipeline (sandboxed child, trusted comparison, timing on the GPU).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from kbx.candidate import make
from kbx.evaluate.pipeline import EvalConfig, evaluate
from kbx.hardware import default_device, device_problem
from kbx.result import Result


def evaluate_code(
    task_id: str,
    code: str,
    device: str | None = None,
    perf: bool = True,
    run_dir: Path | None = None,
    config: EvalConfig | None = None,
) -> Result:
    """The verdict (and on the GPU the speedup) of ``code`` for the task ``task_id``.

    ``code`` may be a raw model answer: fences, chat end tokens and a KernelBench-X test block
    are stripped as for JSONL sources.  ``config`` overrides everything but the device.
    """
    if problem := device_problem(device or default_device()):
        raise ValueError(problem)
    candidate = make("<api>", task_id, code)
    with tempfile.TemporaryDirectory(prefix="kbx-api-") as scratch:
        cfg = config or EvalConfig(
            device=device or default_device(), perf=perf, run_dir=run_dir or Path(scratch)
        )
        return evaluate(candidate, cfg)
