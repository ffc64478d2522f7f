"""How a candidate's child runs, in the one typed shape both sides read: ``ChildConfig`` is the
run's ``EvalConfig`` and ``Tuning`` cut to one job (their field names kept; made by
``childenv.settings``), and ``Job`` is the file the parent writes into the child's folder
(``job.json``) with it inside: the task, the benchmark cases to check, the progress pipe, the
signing key and the confinement settings. The child parses it against this schema before
anything else, and removes the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kbx.core.config import Limits
from kbx.gpu.placement import Placement


class ChildConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    device: str
    timed: bool = False  # the benchmark cases are timed (``EvalConfig.timed``)
    require_triton: bool = True  # off only to validate a task's PyTorch reference
    limits: Limits = Field(default_factory=Limits)
    threads: int = 1  # the child's torch threads
    gpu: int | None = None  # index among the parent's visible GPUs; None: the default one
    lock: str | None = None  # the GPU lock's path (run folder: ``gpu<N>.lock``)
    timing_core: int | None = None  # the core its timing turns run on (``cores``)
    profile: bool = False  # also measure kernel time with the torch profiler (cross-check)
    connections: int = 1  # CUDA_DEVICE_MAX_CONNECTIONS of a child (0: the driver's default)
    fork_server: bool = True  # children from the fork server, not a fresh Python
    triton_cache: Path | None = None  # the Triton cache folder shared by the run's children
    timing_rel_ci: float = 0.01  # a benchmark case's repetitions stop at this CI half-width ...
    timing_budget_ms: float = 500.0  # ... or after this much wall time (``clock.measure``)
    # a compile stage's child (``kbx.sandbox.precompile``): the CUDA capability (90: sm_90) it
    # compiles the candidate's kernels for, with no GPU; None: a candidate's job
    compile_for: int | None = None

    @property
    def place(self) -> Placement:
        """The job's GPU work, as one value (``kbx.gpu.placement``)."""
        return Placement(self.device, self.gpu, self.lock, self.timing_core, self.timed)


class Job(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    bench: tuple[int, ...]  # the benchmark cases checked on this device
    msg_fd: int  # the progress pipe's descriptor in a fresh child
    key: str  # signs the child's messages (``channel.sign``)
    confine: dict[str, Any] | None  # ``confine.prepare``'s settings (None: no confinement)
    config: ChildConfig

    @classmethod
    def read(cls, path: Path) -> Job:
        return cls.model_validate_json(path.read_text())
