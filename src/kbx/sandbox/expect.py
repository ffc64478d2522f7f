"""What a candidate's child must hand back, decided by the trusted side alone.

The parent never judges "the outputs that came back": it judges the outputs it expects, one
file per case and kind, and rejects a child that leaves any out, adds one, or sends one twice
(``forbidden``).  The set follows from the task, the device and the run's settings: every
correctness case (three runs for a random task), its refill where the redrawn case fits the
same buffers, the benchmark cases checked on this device, and on a timed run each benchmark
case's last timed call.  On the CPU the interpreter affords the benchmark cases up to
``CPU_BENCH_BYTES`` (``bench_plan``), each within a CPU-time budget (``Limits.bench_cpu_s``);
the result records which cases were checked (docs/design/trust-model.md).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from kbx.suite import find
from kbx.suite.task import Task
from kbx.suite.tensors import refill_case, same_layout

# Benchmark cases the CPU interpreter is asked to run: at most this many bytes moved (inputs
# and outputs, ``Task.bytes_moved``).  Larger ones are left unchecked on the CPU, and say so.
CPU_BENCH_BYTES = 64 << 20

Key = tuple[str, int]  # (kind, index): kind is cases | refill | bench | timed


@dataclass(frozen=True)
class Expected:
    """The output files a child must hand back, with the number of runs in each."""

    runs: dict[Key, int]
    bench: tuple[int, ...]  # the benchmark cases checked
    bench_total: int

    def without(self, unfinished: set[Key]) -> Expected:
        """The same less benchmark cases cut off by their CPU budget (never correctness
        cases)."""
        runs = {k: n for k, n in self.runs.items() if k not in unfinished}
        kept = tuple(i for i in self.bench if ("bench", i) not in unfinished)
        return Expected(runs, kept, self.bench_total)

    def checked(self) -> dict[str, int]:
        """Cases checked, by kind: what a result records."""
        counts = {"cases": 0, "refill": 0, "bench": len(self.bench), "timed": 0}
        for kind, _ in self.runs:
            if kind != "bench":
                counts[kind] += 1
        counts["bench_total"] = self.bench_total
        return counts


def bench_plan(task: Task, device: str) -> tuple[int, ...]:
    """The benchmark cases whose outputs are checked: all on the GPU; on the CPU those the
    interpreter affords."""
    if device != "cpu":
        return tuple(range(len(task.bench)))
    return tuple(i for i, c in enumerate(task.bench) if task.bytes_moved(c) <= CPU_BENCH_BYTES)


def expected(task: Task, device: str, timed: bool) -> Expected:
    per_call = 3 if task.random else 1
    runs: dict[Key, int] = {}
    for i in range(len(task.cases)):
        runs[("cases", i)] = per_call
        if has_refill(task.id, task.version, i):
            runs[("refill", i)] = 1
    bench = bench_plan(task, device)
    for i in bench:
        if task.random or not timed:  # a timed case is judged on its timed output instead
            runs[("bench", i)] = per_call
        if timed:
            runs[("timed", i)] = 1
    return Expected(runs, bench, len(task.bench))


@functools.lru_cache(maxsize=4096)
def has_refill(task_id: str, version: int, index: int) -> bool:
    """Whether correctness case ``index`` redrawn from its refill seed fits the same buffers
    (as the child's ``Plan`` decides, on CPU copies: shapes and dtypes do not depend on the
    device).  Keyed by the task's id and version."""
    task = find(task_id)
    assert task is not None and task.version == version
    case = task.cases[index]
    first = task.make_inputs(case, "cpu")
    return same_layout(first, task.make_inputs(refill_case(case), "cpu"))
