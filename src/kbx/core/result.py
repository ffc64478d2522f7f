"""Result records: one per candidate, schema-versioned, units in field names."""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from kbx.core.candidate import Candidate
from kbx.suite.verdict import Verdict

SCHEMA_VERSION = 2


def sol_score(kernel_ms: float, eager_ms: float, sol_ms: float) -> float | None:
    """SOL-ExecBench's score, 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL)): 1 at the speed of light,
    0.5 at the baseline's time, towards 0 slower; None where the baseline is at the floor."""
    if eager_ms <= sol_ms:
        return None
    return 1.0 / (1.0 + (kernel_ms - sol_ms) / (eager_ms - sol_ms))


@dataclass
class CaseTiming:
    index: int
    label: str
    kernel_ms: float
    eager_ms: float
    reps: int
    compile_ms: float | None = None  # torch.compile (default mode) of the reference; None: failed
    floor_ms: float | None = None  # roofline: the fastest this case can physically run here
    achieved_gbs: float | None = None
    achieved_tflops: float | None = None
    profiler_ms: float | None = None  # kernel time per call from the torch profiler, if asked
    phases_ms: dict[str, float] | None = None  # the child's wall time per part of the timing
    fresh_ms: float | None = None  # fastest call on never-seen contents (the reuse probe)
    seen_ms: float | None = None  # fastest call on seen contents made beside the probe's
    kernel_ci_ms: list[float] | None = None  # 95% interval of the median kernel_ms [low, high]
    eager_ci_ms: list[float] | None = None  # the same of eager_ms, where the cache kept it
    bandwidth_share: float | None = None  # achieved GB/s over the GPU's copy bandwidth
    compute_share: float | None = None  # achieved TFLOP/s over the matmul peak of the dtype
    dtype_floor_ms: float | None = None  # the roofline at the dtype's peak: SOL score's T_SOL

    @property
    def speedup(self) -> float:
        return self.eager_ms / self.kernel_ms if self.kernel_ms > 0 else math.inf

    @property
    def speedup_ci(self) -> tuple[float, float] | None:
        """The speedup's interval: the slowest eager over the fastest kernel and the other way
        round, from the two medians' 95% intervals (eager's median taken as it is where the
        baseline cache holds no interval for it)."""
        if not self.kernel_ci_ms or min(self.kernel_ci_ms) <= 0:
            return None
        low, high = self.kernel_ci_ms
        eager_low, eager_high = self.eager_ci_ms or (self.eager_ms, self.eager_ms)
        return eager_low / high, eager_high / low

    @property
    def sol_score(self) -> float | None:
        """SOL-ExecBench's score against the roofline of the case's dtype (``hardware``)."""
        return sol_score(self.kernel_ms, self.eager_ms, self.dtype_floor_ms or math.inf)


@dataclass
class Result:
    task_id: str
    verdict: Verdict
    detail: str
    source: str
    candidate_sha256: str
    device: str
    stage: str  # where the evaluation ended: read | import | run | check | perf | done
    speedup: float | None = None  # geometric mean over benchmark cases, vs PyTorch eager
    speedup_compile: float | None = None  # the same vs torch.compile, when it compiled every case
    speedup_ci: list[float] | None = None  # 95% interval of ``speedup`` [low, high] (cases' own)
    cases: list[CaseTiming] = field(default_factory=list)
    fingerprint: dict[str, Any] = field(default_factory=dict)
    task_version: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)  # method, model, round, sample
    duration_s: float = 0.0
    stage_s: dict[str, float] = field(default_factory=dict)  # child phases, check, perf
    started_at: float | None = None  # seconds since the epoch: with duration_s, a run's timeline
    sandbox: str = ""  # the child's confinement: full | partial | none (``confine.probe``)
    checked: dict[str, int] = field(default_factory=dict)  # cases checked by kind, bench_total
    triton_share: dict[str, float] = field(default_factory=dict)  # GPU time in Triton, by case
    # judged again alone (``kbx.run.rerun``): the first evaluation's verdict and detail, and why
    # it was judged again; only this result's verdict counts
    rerun: dict[str, str] | None = None
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def of(
        cls, candidate: Candidate, device: str, verdict: Verdict, detail: str, stage: str
    ) -> Result:
        return cls(
            task_id=candidate.task_id,
            verdict=verdict,
            detail=detail,
            source=candidate.source,
            candidate_sha256=candidate.sha256,
            device=device,
            stage=stage,
            meta=dict(candidate.meta),
        )

    def record(self) -> dict[str, Any]:
        out = asdict(self)
        out["verdict"] = str(self.verdict)
        out["cases"] = [
            dict(asdict(c), speedup=c.speedup, speedup_ci=c.speedup_ci, sol_score=c.sol_score)
            for c in self.cases
        ]
        for key in ("method", "model", "round", "sample"):
            out[key] = self.meta.get(key)
        order = ("read", "import", "run", "check", "perf", "done")
        reached = order.index(self.stage)
        out["imported"] = reached >= order.index("run")  # stage-wise outcome for analysis
        out["ran"] = reached >= order.index("check")
        out["correct"] = reached >= order.index("perf")
        return out


# of speedups (a result's cases, a report's rows): the standard library's, which sums the logs
# with fsum (docs/design/libraries.md)
geometric_mean = statistics.geometric_mean
