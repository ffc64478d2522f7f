"""Twins: candidates of one task with the same code, evaluated once and answered from the result.

A GRPO group or a method comparison often sends the same code more than once.  Its evaluation
depends on the task, the code and the Evaluator's settings (device, timing, limits, which are
fixed for its lifetime and in the key too), so one evaluation answers every twin: in a batch,
the first goes to the backend and the others wait for its result; a later batch's twin is
answered at once from the Evaluator's memory of recent results (``KEPT``).  An answer is the
first's Result with the twin's source and meta, ``meta.answered_from`` naming the candidate
that was evaluated, and no time of its own (``duration_s`` 0, no ``stage_s``).

What is not remembered across batches: kbx's own faults (``harness_error``) and verdicts another
candidate may have caused (``rerun.suspect``), which a later submission deserves a fresh try at.
Within a batch a twin gets its first's final result, after the second evaluation alone where
there was one (``Evaluator.pairs``).  A flaky candidate thus gets one verdict for all its twins:
identical code, identical verdict.  Candidates with a problem (no code, unknown task) are not
twinned: they need no child, and their detail names their own source.
"""

from __future__ import annotations

import copy
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator

from kbx.core.candidate import Candidate
from kbx.core.config import EvalConfig
from kbx.core.result import Result
from kbx.run import rerun
from kbx.suite.verdict import Verdict

KEPT = 4096  # results an Evaluator remembers for later batches' twins (the oldest go first)

Key = tuple[str, ...]


def key(candidate: Candidate, cfg: EvalConfig) -> Key | None:
    """What a candidate's evaluation depends on; None where it is not twinned."""
    if candidate.problem:
        return None
    limits = cfg.limits.model_dump_json()
    return (candidate.task_id, candidate.sha256, cfg.device, str(cfg.timed), limits) + (
        str(cfg.require_triton),
        str(cfg.tuning.timing_rel_ci),
        str(cfg.tuning.timing_budget_ms),
        str(cfg.tuning.profile),
    )


def answer(result: Result, twin: Candidate) -> Result:
    """``result`` (its first's) as the twin's: its source and meta, ``answered_from``."""
    out = copy.deepcopy(result)
    out.source = twin.source
    out.meta = dict(twin.meta, answered_from=result.source)
    out.duration_s, out.stage_s, out.started_at = 0.0, {}, round(time.time(), 3)
    return out


class Memory:
    """An Evaluator's recent results by key, for later batches (any thread)."""

    def __init__(self, size: int = KEPT) -> None:
        self.size = size
        self.results: OrderedDict[Key, Result] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, k: Key) -> Result | None:
        with self.lock:
            if k in self.results:
                self.results.move_to_end(k)
            return self.results.get(k)

    def put(self, k: Key, result: Result) -> None:
        if result.verdict is Verdict.HARNESS_ERROR or rerun.suspect(result):
            return
        with self.lock:
            self.results[k] = copy.deepcopy(result)  # the caller's may change
            self.results.move_to_end(k)
            while len(self.results) > self.size:
                self.results.popitem(last=False)


class Batch:
    """The twins of one ``Evaluator.pairs`` call: ``firsts`` feeds the backend, holding back
    each twin; ``answered`` gives the twins of a first's final result, ``ready`` those a later
    batch answers from ``memory`` (None: twins off, every candidate evaluated)."""

    def __init__(self, cfg: EvalConfig, memory: Memory | None) -> None:
        self.cfg, self.memory = cfg, memory
        self.waiting: dict[Key, list[Candidate]] = {}  # by a first in flight: its twins
        self.known: list[tuple[Candidate, Result]] = []  # answered from memory, to be given

    def firsts(self, candidates: Iterable[Candidate]) -> Iterator[Candidate]:
        for cand in candidates:
            k = key(cand, self.cfg)
            if k is None or self.memory is None:
                yield cand
            elif k in self.waiting:
                self.waiting[k].append(cand)
            elif (found := self.memory.get(k)) is not None:
                self.known.append((cand, answer(found, cand)))
            else:
                self.waiting[k] = []
                yield cand

    def answered(self, first: Candidate, result: Result) -> Iterator[tuple[Candidate, Result]]:
        """The twins of ``first``, now that its ``result`` is final."""
        k = key(first, self.cfg)
        if k is None or self.memory is None:
            return
        self.memory.put(k, result)
        for twin in self.waiting.pop(k, []):
            yield twin, answer(result, twin)

    def ready(self) -> Iterator[tuple[Candidate, Result]]:
        """Twins answered from an earlier batch's result since the last call."""
        while self.known:
            yield self.known.pop(0)
