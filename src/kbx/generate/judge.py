"""The evaluator in the loop: candidates go to a ``kbx.Evaluator`` (or any function with its
shape, so tests can stub it), and what comes back is an ``Outcome`` whose ``feedback`` is all a
method may see.  Outcomes are cached by task, code and device: a resumed run judges nothing
twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from kbx.core.candidate import Candidate, make
from kbx.core.result import Result
from kbx.generate.cache import Cache, digest
from kbx.generate.feedback import Feedback, feedback

if TYPE_CHECKING:
    from kbx.run.evaluator import Evaluator

EvaluateFn = Callable[[list[Candidate]], list[Result]]


class Outcome(BaseModel):
    task_id: str
    code_sha256: str
    verdict: str
    stage: str
    speedup: float | None
    duration_s: float
    cpu_s: float = 0.0  # the candidate's child processes' CPU seconds
    feedback: Feedback
    cached: bool = False


def through(ev: Evaluator) -> EvaluateFn:
    """``ev`` as an EvaluateFn: one Result per candidate, in the candidates' order."""

    def run(candidates: list[Candidate]) -> list[Result]:
        # by the candidate itself: two with the same key are one evaluation and its twin
        # (``kbx.run.twins``), whose time and CPU are the first's alone
        results = {id(c): r for c, r in ev.pairs(candidates)}
        return [results[id(c)] for c in candidates]

    return run


def outcome_of(result: Result, code: str) -> Outcome:
    return Outcome(
        task_id=result.task_id,
        code_sha256=hashlib.sha256(code.encode()).hexdigest(),
        verdict=str(result.verdict),
        stage=result.stage,
        speedup=result.speedup,
        duration_s=result.duration_s,
        cpu_s=float(result.stage_s.get("child_cpu", 0.0)),
        feedback=feedback(result),
    )


class Judge:
    """Judges batches of code for one task; blocking evaluator work runs in a thread."""

    def __init__(self, evaluate: EvaluateFn, device: str, cache: Cache | None) -> None:
        self.evaluate = evaluate
        self.device = device
        self.cache = cache

    def close(self) -> None:
        """Nothing to end: each batch's thread is a daemon (``in_thread``)."""

    def key(self, candidate: Candidate) -> str:
        return digest({"task": candidate.task_id, "code": candidate.sha256, "device": self.device})

    async def judge(
        self, task_id: str, codes: list[str], meta: dict[str, Any] | None = None
    ) -> list[Outcome]:
        candidates = [make(f"generate:{task_id}", task_id, code, meta) for code in codes]
        known: dict[int, Outcome] = {}
        for i, candidate in enumerate(candidates):
            if self.cache and (hit := self.cache.outcome(self.key(candidate))):
                known[i] = Outcome.model_validate({**hit, "cached": True})
        todo = [i for i in range(len(candidates)) if i not in known]
        if todo:
            batch = [candidates[i] for i in todo]
            results = await in_thread(self.evaluate, batch)
            for i, result in zip(todo, results, strict=True):
                known[i] = outcome_of(result, candidates[i].code)
                if self.cache:
                    self.cache.put_outcome(self.key(candidates[i]), known[i].model_dump())
        return [known[i] for i in range(len(candidates))]


async def in_thread(fn: EvaluateFn, batch: list[Candidate]) -> list[Result]:
    """``fn(batch)`` in a daemon thread of its own.  After a Ctrl-C the command closes the
    Evaluator and exits; a thread still inside ``fn`` then neither holds the process open (a
    pool's workers are joined at exit: the hang of a stopped ``kbx run``) nor reports back."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[list[Result]] = loop.create_future()

    def settle(result: list[Result] | None, error: BaseException | None) -> None:
        if done.done():  # cancelled meanwhile
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result or [])

    def run() -> None:
        try:
            result, error = fn(batch), None
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            result, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=run, daemon=True, name="kbx-judge").start()
    return await done
