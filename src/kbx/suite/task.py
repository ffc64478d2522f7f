"""Task, Case, Tolerance: the declarative contract a task file fills in.

A task module defines one ``TASK = Task(...)``.  Everything here is plain data plus pure functions
(reference, input maker, checker), so the trusted evaluator and the candidate's child process can
both rebuild the same inputs from the same seed without sharing any state.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, TypeAlias

import torch


@dataclass(frozen=True)
class Inputs:
    """Positional and keyword arguments for one call of the entry function."""

    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    """One seeded input configuration.  ``shape`` is read by the task's ``make_inputs``."""

    shape: tuple[int, ...]
    seed: int
    dtype: torch.dtype = torch.float32
    dist: str = "normal"  # normal | outlier | corner: read by kbx.suite.inputs.tensor
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if self.dist not in ("normal", "outlier", "corner"):
            raise ValueError(f"unknown input distribution {self.dist!r}")
        if any(d <= 0 for d in self.shape):
            raise ValueError(f"case shape must be positive, got {self.shape}")
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    @property
    def torch_seed(self) -> int:
        """The seed torch's generator gets before each call: derived from, but not equal to, the
        input seed, so a random op's stream is not the stream that drew the inputs."""
        return (self.seed * 2654435761 + 0x9E3779B9) % (1 << 31)

    def label(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        extra = ",".join(f"{k}={v}" for k, v in self.params.items())
        dtype = str(self.dtype).removeprefix("torch.")
        return f"{dims} {dtype} {self.dist}" + (f" {extra}" if extra else "")


@dataclass(frozen=True)
class Tolerance:
    """Element-wise closeness: |got - want| <= atol + rtol * |want|; NaN and Inf must match."""

    rtol: float
    atol: float

    def __post_init__(self) -> None:
        if self.rtol < 0 or self.atol < 0:
            raise ValueError("tolerances must be non-negative")


# One quantization step of an output: a number, a tensor that broadcasts to the output, or a
# tuple of such whose product is the step (scales per row and per column, never multiplied out).
Steps: TypeAlias = torch.Tensor | float | tuple[torch.Tensor | float, ...]


@dataclass(frozen=True)
class QuantStep:
    """A quantization boundary in the output (docs/design/tolerances.md, Quantization steps): a
    right kernel can land one quantization step away from torch on a few elements (a value at a
    step's edge rounded the other way, another accumulation order).  At most ``share`` of an
    output's elements (at least one) may differ by up to one step beyond the tolerance,
    |got - want| <= step + atol + rtol * |want|; every other element keeps the tolerance.

    ``size`` gives one step of the output's scale for a case's inputs (``Steps``: 1 for int8
    codes, the scale of a dequantized output, the product of scales where a quantized
    intermediate feeds it); ``unit`` says what it is, in words, for the precision text and
    ``kbx show``."""

    size: Callable[[Inputs], Steps]
    share: float
    unit: str

    def __post_init__(self) -> None:
        if not 0 < self.share <= 1e-3:
            raise ValueError(f"a quantization step's share must be in (0, 1e-3], not {self.share}")

    def text(self) -> str:
        """The contract's sentence, for the task's precision text."""
        return (
            f"At a quantization boundary a right kernel can land one step away from torch: up "
            f"to 1 in {round(1 / self.share):,} of the output's elements (at least one) may "
            f"differ by one quantization step ({self.unit}) beyond the tolerance; every other "
            "element keeps it."
        )


# A property checker returns None when the output is acceptable, else a one-line reason.
Checker = Callable[[Inputs, Any], "str | None"]


@dataclass(frozen=True)
class Task:
    """One benchmark task.  ``id``/``category``/``name`` are filled in by the suite loader."""

    entry: str
    signature: str
    description: str
    precision: str
    reference: Callable[..., Any]
    make_inputs: Callable[[Case, str], Inputs]
    cases: tuple[Case, ...]
    bench: tuple[Case, ...]
    flops: Callable[[Case], float]
    bytes_moved: Callable[[Case], float]
    tolerance: Tolerance
    check: Checker | None = None  # replaces the element-wise comparison (non-unique outputs)
    quant: QuantStep | None = None  # a few elements may be one quantization step off
    random: bool = False  # output is random: judged by ``check`` plus seed determinism
    inplace: tuple[int, ...] = ()  # positional args whose final values are part of the output
    aliases: tuple[str, ...] = ()  # other entry names accepted (released KernelBench-X names)
    # generic wrong outputs of `kbx validate` that are right answers here (uniform noise for rand)
    exempt_probes: tuple[str, ...] = ()
    math: str = ""
    notes: str = ""
    paper: bool = True
    version: int = 1
    id: str = ""
    category: str = ""
    name: str = ""

    def __post_init__(self) -> None:
        if not self.cases:
            raise ValueError(f"task {self.entry}: needs at least one correctness case")
        if self.random and self.check is None:
            raise ValueError(f"task {self.entry}: a random task needs a property checker")
        if self.quant is not None and (self.check is not None or self.random):
            raise ValueError(f"task {self.entry}: a quantization step needs element-wise checks")
        if self.quant is not None and self.quant.text() not in self.precision:
            raise ValueError(f"task {self.entry}: the precision text must state its step")
        seeds = [c.seed for c in self.cases + self.bench]
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"task {self.entry}: case seeds must be distinct")

    def entry_names(self) -> tuple[str, ...]:
        return (self.entry, *self.aliases)

    def held_bytes(self, case: Case) -> int:
        """An upper estimate of the bytes one call's tensors take, for output caps and memory
        budgets: what it moves (``bytes_moved``, which is a lower bound of its traffic) plus,
        where the case's shape is a tensor's (``shaped``), its bytes for the output and for each
        input it writes in place (an in-place kernel may move a few rows of a whole tensor that
        is still output: ``Index/index_fill_``)."""
        moved = int(self.bytes_moved(case))
        if not self.shaped:
            return moved
        return moved + math.prod(case.shape) * case.dtype.itemsize * (1 + len(self.inplace))

    @cached_property
    def shaped(self) -> bool:
        """Whether a case's ``shape`` is the shape of one of its input tensors, as in the first
        correctness case's inputs (built once, on the CPU), rather than a tuple of sizes such as
        a matmul's (M, K, N), whose product is no tensor's size."""
        case = self.cases[0]
        made = self.make_inputs(case, "cpu")
        values = [*made.args, *made.kwargs.values()]
        return any(
            isinstance(v, torch.Tensor) and tuple(v.shape) == tuple(case.shape) for v in values
        )
