"""The analysis results that the report draws: a plain JSON-able shape, filled by the statistics
(kbx.analyze.stats) and read by kbx.analyze.report.  Rates are shares in [0, 1]; speedups are
ratios over PyTorch eager (above 1 is faster), always positive, so they are drawn on a log axis."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

Share = Annotated[float, Field(ge=0.0, le=1.0)]
Positive = Annotated[float, Field(gt=0.0)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Interval(_Frozen):
    """A rate with its confidence interval (e.g. a bootstrap or Wilson interval) over n tasks."""

    value: Share
    lo: Share
    hi: Share
    n: int = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if not self.lo <= self.value <= self.hi:
            raise ValueError(f"want lo <= value <= hi, got {self.lo}, {self.value}, {self.hi}")
        return self


class MethodRates(_Frozen):
    """One method over the tasks counted (attempted, or the suite): call (runs without error),
    exe (correct), and fast_1 (correct and faster than eager) rates, each with its interval;
    None is n/a: nothing counted, or (fast_1) nothing timed."""

    call: Interval | None
    exe: Interval | None
    fast_1: Interval | None


class CategoryCell(_Frozen):
    """One method on one category: the category table's row and the heatmap's cell; a rate is
    None (n/a) where the method attempted no task of the category (fast_1: or timed none)."""

    tasks: int = Field(ge=0)  # tasks counted: attempted (or, over the suite, all)
    call_rate: Share | None
    exe_rate: Share | None
    fast_1_rate: Share | None
    geomean_speedup: Positive | None = None  # None when no candidate was correct


class FastPCurve(_Frozen):
    """fast_p: the share of tasks whose candidate is correct with speedup above p, at each p."""

    p: list[float]
    share: list[float]
    lo: list[float] = []  # the 95% interval of each share (bootstrap over tasks), when computed
    hi: list[float] = []

    @model_validator(mode="after")
    def _aligned(self) -> Self:
        if len(self.p) != len(self.share) or not self.p:
            raise ValueError("fast_p needs as many shares as thresholds, and at least one")
        if any(not 0.0 <= s <= 1.0 for s in self.share):
            raise ValueError("fast_p shares must lie in [0, 1]")
        if self.lo and (len(self.lo) != len(self.p) or len(self.hi) != len(self.p)):
            raise ValueError("fast_p intervals need one end per threshold")
        return self


class Round(_Frozen):
    """One round of an iterative method (round 0 is the first attempt)."""

    round: int = Field(ge=0)
    call_rate: Share
    exe_rate: Share
    mean_speedup: Positive | None = None  # geometric mean over the round's correct candidates
    exe: Interval | None = None  # the exe rate with its 95% interval


class Rescue(_Frozen):
    """Speedups of the tasks an iterative method made correct only after round 0 (rescued) and
    of those correct from round 0 on (persistent), to see whether repaired kernels are slower."""

    rescued: list[float]
    persistent: list[float]


class AnalysisResults(_Frozen):
    """Everything the report shows.  Optional parts (rounds, rescue, hardware) are left empty
    when the runs behind the analysis have no iterations or ran on one machine only."""

    schema_version: Literal[1] = 1
    title: str = "KernelBench-X analysis"
    subtitle: str = ""  # devices, dates, kbx versions, coverage: kbx.analyze.identity
    runs: list[str] = []  # one line per run: label, inputs, GPU, dates, kbx, tasks attempted
    untimed: list[str] = []  # methods with no timed candidate: their speedup figures are n/a
    methods: list[str] = Field(min_length=1)
    categories: list[str] = Field(min_length=1)
    rates: dict[str, MethodRates]  # method -> its suite-wide rates
    by_category: dict[str, dict[str, CategoryCell]]  # category -> method -> cell
    speedups: dict[str, list[float]]  # category -> speedups of its correct candidates
    fast_p: dict[str, FastPCurve]  # method -> its curve
    slower_share: dict[str, Interval]  # method -> share of its correct candidates below 1x
    rounds: dict[str, list[Round]] = {}  # iterative method -> its rounds in order
    rescue: dict[str, Rescue] = {}  # iterative method -> rescued and persistent speedups
    hardware: dict[str, dict[str, float]] = {}  # hardware -> method -> geomean speedup

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        """Keys name only the declared methods and categories, and every method has its rates,
        so the report never meets a row or column it cannot place."""
        methods, categories = set(self.methods), set(self.categories)
        _known("rates", self.rates.keys(), methods, need_all=True)
        _known("fast_p", self.fast_p.keys(), methods)
        _known("slower_share", self.slower_share.keys(), methods)
        _known("rounds", self.rounds.keys(), methods)
        _known("rescue", self.rescue.keys(), methods)
        _known("by_category", self.by_category.keys(), categories, need_all=True)
        _known("speedups", self.speedups.keys(), categories)
        for category, cells in self.by_category.items():
            _known(f"by_category[{category!r}]", cells.keys(), methods)
        for hw, per_method in self.hardware.items():
            _known(f"hardware[{hw!r}]", per_method.keys(), methods)
        for name, values in [*self.speedups.items(), *_rescue_lists(self.rescue)]:
            if any(v <= 0 for v in values):
                raise ValueError(f"speedups must be positive ({name})")
        return self


def _known(field: str, keys: Iterable[str], allowed: set[str], need_all: bool = False) -> None:
    got = set(keys)
    if got - allowed:
        raise ValueError(f"{field} names unknown entries: {sorted(got - allowed)}")
    if need_all and allowed - got:
        raise ValueError(f"{field} lacks entries for: {sorted(allowed - got)}")


def _rescue_lists(rescue: dict[str, Rescue]) -> list[tuple[str, list[float]]]:
    return [(f"rescue[{m!r}]", r.rescued + r.persistent) for m, r in rescue.items()]
