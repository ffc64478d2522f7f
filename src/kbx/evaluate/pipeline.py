"""The only place the stages are chained: read -> run in the sandbox -> check -> perf."""

from __future__ import annotations

import contextlib
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbx.candidate import Candidate
from kbx.evaluate import confine, perf, reference
from kbx.evaluate.sandbox import ChildRun, Limits, SandboxConfig, run_child
from kbx.hardware import fingerprint
from kbx.result import Result
from kbx.runtime import cores
from kbx.runtime.gpulock import waited_s
from kbx.runtime.gpuops import on_device
from kbx.suite import find
from kbx.task import Task
from kbx.verdict import Reject, Verdict


@dataclass(frozen=True)
class EvalConfig:
    device: str = "cpu"
    perf: bool = True  # ignored on the CPU, where nothing is timed
    limits: Limits = Limits()
    run_dir: Path | None = None  # holds the Triton cache and the timing lock
    threads: int = 1
    require_triton: bool = True  # off only to validate a task's PyTorch reference as a candidate
    baseline_cache: Path | None = None  # SQLite file of baselines reused across runs
    compile_baseline: bool = True  # also time torch.compile of the reference
    gpu: int | None = None  # which visible GPU runs this job (set by the scheduler)
    profile: bool = False  # cross-check candidate timings with the torch profiler
    fork: bool = True  # children forked from the fork server (else a fresh Python each)
    triton_cache: Path | None = None  # shared across runs (default: run_dir / "triton-cache")
    baselines_first: bool = True  # measure the missing baselines before any candidate runs
    baseline_workers: int | None = None  # tasks at once per GPU in that stage (default: cores)
    check_threads: int | None = None  # the parent's torch threads (default: a quarter of cores)
    thread_streams: bool = False  # the parent's threads on streams of their own (gpuops)

    @property
    def timed(self) -> bool:
        return self.perf and self.device == "cuda"

    @property
    def kinds(self) -> tuple[str, ...]:
        """The baselines each timed task is compared with."""
        return ("eager", "compile") if self.compile_baseline else ("eager",)

    def sandbox(self) -> SandboxConfig:
        """The child's settings.  Paths are made absolute: the child runs in its own folder, so
        a relative run folder (``--work runs/x``) would name another lock there."""
        run_dir = self.run_dir.resolve() if self.run_dir else None
        return SandboxConfig(
            device=self.device,
            perf=self.timed,
            limits=self.limits,
            threads=self.threads,
            require_triton=self.require_triton,
            cache_dir=self.triton_cache.resolve()
            if self.triton_cache
            else (run_dir / "triton-cache" if run_dir else None),
            lock_path=run_dir / f"gpu{self.gpu or 0}.lock"
            if run_dir and self.device == "cuda"
            else None,
            gpu=self.gpu,
            profile=self.profile,
            fork=self.fork,
            timing_core=cores.for_gpu(self.gpu) if self.device == "cuda" else None,
        )

    def device_context(self) -> contextlib.AbstractContextManager[Any]:
        """The parent's own GPU work (references, baselines) on the job's GPU."""
        return on_device(self.gpu if self.device == "cuda" else None)


def evaluate(candidate: Candidate, cfg: EvalConfig) -> Result:
    """Evaluate one candidate; every outcome, kbx's own faults included, is a Result."""
    started, started_at = time.monotonic(), time.time()
    stage = "read"
    result: Result
    task: Task | None = None
    try:
        if candidate.problem:
            raise Reject(*candidate.problem)
        task = find(candidate.task_id)
        if task is None:
            raise Reject(Verdict.UNKNOWN_TASK, f"no task {candidate.task_id!r}")
        stage = "import"
        sandbox = cfg.sandbox()
        lock = sandbox.lock
        if cfg.timed:  # measured (or looked up) while the candidate runs
            perf.prefetch(task, cfg.kinds, lock, perf.open_cache(cfg.baseline_cache), cfg.gpu)
        reference.prefetch(task, cfg.device, lock, cfg.gpu, cfg.timed)  # likewise
        before_child = time.monotonic() - started
        child = run_child(task, candidate.code, sandbox)
        with cfg.device_context():
            stage, checked = "check", time.monotonic()
            spent: dict[str, float] = {}  # by kind of output: cases, refill, bench, timed
            waited = reference.judge(task, child.outputs, cfg.device, lock, spent, child.variants)
            result = Result.of(candidate, cfg.device, Verdict.PASSED, passed_detail(child), "done")
            result.checked = child.checked
            result.triton_share = child.triton_share
            result.stage_s = dict(child.stage_s, check=round(time.monotonic() - checked, 3))
            result.stage_s["start"] = round(before_child, 3)
            result.stage_s["check_wait"] = round(waited, 3)
            result.stage_s.update({f"check_{k}": round(v, 3) for k, v in spent.items()})
            if cfg.timed:
                stage, timed = "perf", time.monotonic()
                queued = waited_s()
                time_against_baselines(task, child.timings, lock, cfg, result)
                result.stage_s["baselines"] = round(time.monotonic() - timed, 3)
                result.stage_s["baselines_wait"] = round(waited_s() - queued, 3)
        result.task_version = task.version
    except Reject as r:
        stage = refine_stage(stage, r)
        result = Result.of(candidate, cfg.device, r.verdict, r.detail, stage)
    except Exception as exc:  # noqa: BLE001 - kbx's own fault, never blamed on the candidate
        where = traceback.extract_tb(exc.__traceback__)[-1]
        detail = f"{type(exc).__name__}: {exc} ({Path(where.filename).name}:{where.lineno})"
        result = Result.of(candidate, cfg.device, Verdict.HARNESS_ERROR, detail, stage)
    if task is not None:
        reference.forget(task)  # what the judge did not take (a failed candidate: all of it)
    result.fingerprint = fingerprint(cfg.device)
    result.sandbox = confine.probe().name
    result.duration_s = round(time.monotonic() - started, 3)
    result.started_at = round(started_at, 3)
    return result


def time_against_baselines(
    task: Task, timings: list[dict[str, Any]], lock: str | None, cfg: EvalConfig, result: Result
) -> None:
    cache_dir = cfg.baseline_cache.parent if cfg.baseline_cache else None
    result.cases, result.speedup, result.speedup_compile = perf.speedups(
        task,
        timings,
        lock,
        perf.open_cache(cfg.baseline_cache),
        cfg.compile_baseline,
        perf.peaks(cache_dir, lock),
        cfg.gpu,
    )
    result.detail += f"; {result.speedup:.3g}x vs eager"


def passed_detail(child: ChildRun) -> str:
    """What a passing result says, benchmark sizes left unchecked included."""
    checked, total = child.checked.get("bench", 0), child.checked.get("bench_total", 0)
    if checked == total:
        return "all cases match"
    return f"all cases match; benchmark sizes not checked ({checked} of {total} checked)"


def refine_stage(stage: str, r: Reject) -> str:
    """Failures inside the child are import-time or run-time: tell them apart for analysis."""
    if stage != "import":
        return stage
    early = (Verdict.IMPORT_FAILED, Verdict.NO_ENTRY, Verdict.HARNESS_ERROR)
    return "import" if r.verdict in early else "run"
