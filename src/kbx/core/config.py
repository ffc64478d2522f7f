"""What a run is configured by: a few choices a user makes, and every tuning knob in one place.

``EvalConfig`` holds what the evaluation of one candidate depends on (device, timing on or off,
the run folder, the baseline cache); ``Tuning`` holds the knobs that change how fast a run goes,
never its verdicts, each with a documented default.  Tuning can be read from a TOML file
(``kbx eval --config FILE``): its top-level keys are ``Tuning``'s fields and its ``[limits]``
table is ``Limits``.  A wrong key or value is a ``ConfigError`` naming the file and the key.
The resolved configuration is written to the run folder (``config.json``) and to its summary.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

CACHE_ENV = "KBX_CACHE_DIR"  # the one environment variable kbx reads


class ConfigError(ValueError):
    """A configuration file or value kbx cannot use; the message names the file and the key."""


class Limits(BaseModel):
    """Per-stage limits of a child: CPU seconds of its process tree (a loaded machine does not
    make them run out sooner), each with a wall-clock backstop ``wall_factor`` times larger (a
    child that sleeps or blocks); kbx's own set-up, GPU-lock queueing and a GPU-lock hold that
    others wait for (a kernel that never ends) in wall seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    setup_s: float = Field(180.0, gt=0, description="kbx's own start-up in the child (wall)")
    import_s: float = Field(60.0, gt=0, description="the candidate's import (CPU s)")
    case_s: float = Field(120.0, gt=0, description="one correctness case, compiles included")
    timing_s: float = Field(120.0, gt=0, description="one benchmark case's timing (CPU s)")
    bench_cpu_s: float = Field(20.0, gt=0, description="a CPU benchmark case; past it unchecked")
    wall_factor: float = Field(4.0, ge=1, description="wall-clock backstop over CPU limits")
    lock_s: float = Field(1800.0, gt=0, description="queueing for the GPU lock (wall)")
    hold_s: float = Field(
        120.0, gt=0, description="holding the GPU lock while others wait for it (wall)"
    )

    def with_timeout(self, seconds: float | None) -> Limits:
        """The limits with ``--timeout-s`` applied to the import, each case and each timing."""
        if not seconds:
            return self
        return self.model_copy(update={"import_s": seconds, "case_s": seconds, "timing_s": seconds})


class Tuning(BaseModel):
    """Every knob that trades speed or resources; None means "decided from the machine"."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    jobs: int | None = Field(None, ge=1, description="candidates in flight (cpu: cores; gpu: 8)")
    procs: int | None = Field(None, ge=1, description="worker processes (one per GPU if several)")
    fork_server: bool = Field(True, description="fork children from a warm server")
    spares: int | None = Field(None, ge=0, description="idle forked children per GPU (cuda: 8)")
    connections: int = Field(1, ge=0, description="CUDA_DEVICE_MAX_CONNECTIONS of a child")
    ahead_bytes: int = Field(4 << 30, ge=0, description="reference outputs computed ahead per GPU")
    gpu_memory_gb: float | None = Field(
        None, gt=0, description="GiB of each GPU kbx may use (auto: its free memory at the start)"
    )
    check_threads: int | None = Field(None, ge=1, description="the parent's torch threads")
    baseline_workers: int | None = Field(None, ge=1, description="baseline tasks at once per GPU")
    baselines_first: bool = Field(
        True, description="measure missing baselines first (candidates start in its tail)"
    )
    compile_baseline: bool = Field(True, description="also time torch.compile of the reference")
    triton_cache: Path | None = Field(None, description="a Triton cache shared across runs")
    compile_ahead: int | None = Field(
        None, ge=0, description="GPU runs: compile stages ahead of GPU jobs at once (0: off)"
    )
    profile: bool = Field(False, description="cross-check timings with the torch profiler")
    timing_rel_ci: float = Field(
        0.01, gt=0, le=0.5, description="a candidate's timing stops at this median CI half-width"
    )
    timing_budget_ms: float = Field(
        500.0, gt=0, description="wall time after which a case's repetitions stop regardless"
    )
    trace: bool = Field(False, description="start-up marks on stderr (logger kbx.core.trace)")
    rerun_alone: bool = Field(
        True, description="evaluate again, alone, a verdict another candidate may have caused"
    )
    twins: bool = Field(
        True, description="evaluate a task's identical code once, answer the others from it"
    )
    limits: Limits = Field(default_factory=Limits)


def load_tuning(path: Path | None, **overrides: Any) -> Tuning:
    """The tuning of a TOML file (none: the defaults), with ``overrides`` on top."""
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise ConfigError(f"{path}: no such configuration file") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not TOML: {exc}") from None
    if limits := overrides.pop("limits", None):
        base = data.get("limits", {})  # not a table: left for the validation to name
        data["limits"] = {**base, **limits} if isinstance(base, dict) else base
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return Tuning.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(part) for part in first["loc"])
        where = f"{path}: " if path else ""
        raise ConfigError(f"{where}key {key!r}: {first['msg']}") from None


def cache_dir() -> Path:
    """Where kbx keeps what outlives a run: $KBX_CACHE_DIR, else $XDG_CACHE_HOME/kbx."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kbx"


@dataclass(frozen=True)
class EvalConfig:
    """What evaluating one candidate depends on; the scheduler sets ``gpu`` per job."""

    device: str = "cpu"
    perf: bool = True  # ignored on the CPU, where nothing is timed
    run_dir: Path | None = None  # holds the Triton cache and the timing lock
    baseline_cache: Path | None = None  # SQLite file of baselines reused across runs
    require_triton: bool = True  # off only to validate a task's PyTorch reference as a candidate
    threads: int = 1  # the child's torch threads
    gpu: int | None = None  # which visible GPU runs this job
    timing_core: int | None = None  # the core that GPU's timing turns run on (``cores``)
    tuning: Tuning = field(default_factory=Tuning)

    @property
    def timed(self) -> bool:
        return self.perf and self.device == "cuda"

    @property
    def limits(self) -> Limits:
        return self.tuning.limits

    @property
    def kinds(self) -> tuple[str, ...]:
        """The baselines each timed task is compared with."""
        return ("eager", "compile") if self.tuning.compile_baseline else ("eager",)

    def tuned(self, **changes: Any) -> EvalConfig:
        """A copy with some tuning knobs changed."""
        return replace(self, tuning=self.tuning.model_copy(update=changes))

    def record(self) -> dict[str, Any]:
        """The resolved configuration, as written to the run folder and its summary."""
        return {
            "device": self.device,
            "perf": self.timed,
            "baseline_cache": str(self.baseline_cache) if self.baseline_cache else None,
            "tuning": self.tuning.model_dump(mode="json"),
        }
