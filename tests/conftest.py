"""Shared helpers: evaluate a source through the real pipeline (sandboxed children) and read
its records."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kbx.core.config import Limits, Tuning
from kbx.run.evaluator import Evaluator
from kbx.run.plan import run_eval

ROOT = Path(__file__).resolve().parent.parent
BAD = ROOT / "tests" / "bad"
REFERENCE = ROOT / "solutions" / "reference"
SHARED = ROOT.parent / "shared" / "kernelbenchx"
JOBS2 = ROOT / "tests" / "jobs2.toml"  # ``kbx eval --config``: two candidates in flight
JOBS1 = ROOT / "tests" / "jobs1.toml"

EvalFn = Callable[..., list[dict[str, Any]]]

# One task of each category, CI's share of the whole-suite runs (``pytest -m slow``): each
# category's median task by CPU time beside two busy loops (reference-cpu.jsonl in
# benchmarks/results).  The Triton reference solutions beside two busy loops take about 150 s of
# `make test` where the whole suite takes 25 minutes (its figure: ``benchmarks/gpu.py reference
# --device cpu --busy 2``); ``kbx validate`` about 20 s where the whole suite takes 160 s.
SAMPLE = (
    "Activation/tanh_bf16 Convolution/conv_transpose2d Fusion/fused_gelu_min Index/masked_select "
    "LinearAlgebra/determinant_lu Loss/smooth_l1_loss Math/signbit MatrixMultiply/matmul_fp16 "
    "Normalization/normalize_pairwise_distance Optimizer/Lion Pooling/avg_pool1d "
    "Quantization/conv2d_w8a8 Random/rand Reduce/min_gelu SpatialOps/grid_sample_with_affine"
).split()


@pytest.fixture
def run_source(tmp_path: Path) -> EvalFn:
    """Evaluate ``source`` and return its records (one per candidate)."""

    def run(
        source: Path,
        device: str = "cpu",
        out: Path | None = None,
        jobs: int = 2,
        timeout_s: float = 60.0,
        pattern: str | None = None,
    ) -> list[dict[str, Any]]:
        out = out or tmp_path / f"run-{len(list(tmp_path.iterdir()))}"
        limits = Limits(import_s=timeout_s, case_s=timeout_s, timing_s=max(timeout_s, 120.0))
        tuning = Tuning(jobs=jobs, limits=limits, compile_baseline=False)
        with Evaluator(device, run_dir=out, tuning=tuning) as ev:
            run_eval(source, out, ev, pattern)
        return [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]

    return run


def keyed(outputs: dict[str, list[Any]]) -> dict[tuple[str, int], list[Any]]:
    """Outputs listed by kind (``runner.run_cases``' return) as the judge takes them: by kind
    and index, cases without outputs (``[]``) left out."""
    return {
        (kind, i): runs for kind, every in outputs.items() for i, runs in enumerate(every) if runs
    }


@pytest.fixture(autouse=True)
def no_run_logs_left_open() -> Any:
    """A test that opens a run folder's logs (``kbx.core.incidents``) leaves the next test's
    process without them."""
    from kbx.core import incidents

    before = incidents.folder()
    yield
    incidents._state["folder"] = before
