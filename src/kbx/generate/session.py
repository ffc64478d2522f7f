"""The services a method uses for one task: ask the model, judge code, note a decision.  Every
call is costed in the ledger and written to the trace; a method holds no client or evaluator
of its own."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from kbx.generate.client import LLM, Messages, Reply
from kbx.generate.config import Price, Sampling
from kbx.generate.cost import Ledger, usd
from kbx.generate.judge import Judge, Outcome
from kbx.generate.outputs import Trace

OnStep = Callable[[str, str], None]  # (task_id, what it is doing now)


@dataclass
class Session:
    method: str
    model: str
    llm: LLM
    judge: Judge
    trace: Trace
    ledger: Ledger
    prices: dict[str, Price]
    on_step: OnStep | None = None
    rounds: dict[str, int] = field(default_factory=dict)  # task -> the round it is in now
    modes: dict[str, list[str]] = field(default_factory=dict)  # task -> GEAK's mode per round
    outcomes: dict[str, list[Outcome]] = field(default_factory=dict)  # task -> judged in loop
    errors: dict[str, str] = field(default_factory=dict)  # task -> its last failed call's why

    def enter(self, task_id: str, round_: int, mode: str | None = None) -> None:
        """A task begins a round (in ``mode``): every later trace event of it names the round."""
        self.rounds[task_id] = round_
        if mode is not None:
            self.modes.setdefault(task_id, []).append(mode)

    async def ask(
        self,
        task_id: str,
        kind: str,
        messages: Messages,
        sampling: Sampling,
        samples: Sequence[int] = (0,),
    ) -> list[Reply]:
        replies = await self.llm.chat(messages, sampling, samples)
        cost = self.ledger.task(task_id)
        prompt_sha = hashlib.sha256(repr(messages).encode()).hexdigest()[:16]
        for sample, reply in zip(samples, replies, strict=True):
            cost.calls += 1
            cost.cached_calls += reply.cached
            cost.failed_calls += reply.error is not None
            cost.tokens_in += reply.tokens_in
            cost.tokens_out += reply.tokens_out
            cost.usd += usd(self.prices, self.model, reply.tokens_in, reply.tokens_out)
            cost.latency_s += reply.latency_s
            cost.retries += reply.retries
            cost.clamped_calls += reply.clamped_from is not None
            if reply.error is not None:
                self.errors[task_id] = reply.error
            self.trace.event(
                "llm", task_id, kind=kind, sample=sample, prompt_sha=prompt_sha,
                messages=messages, reply=asdict(reply), round=self.rounds.get(task_id, 0),
            )  # fmt: skip
        return replies

    async def test(
        self, task_id: str, codes: list[str], meta: dict[str, Any] | None = None
    ) -> list[Outcome]:
        outcomes = await self.judge.judge(task_id, codes, meta)
        cost = self.ledger.task(task_id)
        for code, outcome in zip(codes, outcomes, strict=True):
            cost.eval_cached += outcome.cached
            cost.eval_runs += not outcome.cached
            cost.eval_s += 0.0 if outcome.cached else outcome.duration_s
            cost.eval_cpu_s += 0.0 if outcome.cached else outcome.cpu_s
            self.outcomes.setdefault(task_id, []).append(outcome)
            self.trace.event(
                "eval", task_id, code=code, outcome=outcome.model_dump(),
                round=self.rounds.get(task_id, 0),
            )  # fmt: skip
        return outcomes

    def note(self, task_id: str, kind: str, **fields: Any) -> None:
        """A decision of the method (mode, selection, stop), to the trace."""
        self.trace.event(kind, task_id, **{"round": self.rounds.get(task_id, 0), **fields})

    def step(self, task_id: str, what: str) -> None:
        if self.on_step:
            self.on_step(task_id, what)

    def report(self, task_id: str) -> str:
        """What happened to a task, for its progress line: ``3/12 passed, best 1.40x; modes
        fresh, debug`` or ``no reply (connection failed: ... (after 5 retries))``."""
        cost = self.ledger.task(task_id)
        if cost.calls and cost.failed_calls == cost.calls:
            return f"no reply ({self.errors.get(task_id, 'every call failed')})"
        judged = self.outcomes.get(task_id, [])
        passed = [o for o in judged if o.verdict == "passed"]
        speedups = [o.speedup for o in passed if o.speedup]
        parts = [f"{len(passed)}/{len(judged)} passed" if judged else f"{cost.calls} replies"]
        if speedups:
            parts[0] += f", best {max(speedups):.2f}x"
        if modes := self.modes.get(task_id):
            parts.append("modes " + ", ".join(modes))
        if cost.failed_calls:
            why = self.errors.get(task_id, "")
            parts.append(f"{cost.failed_calls} of {cost.calls} calls failed ({why})")
        return "; ".join(parts)

    def cost_so_far(self, task_id: str) -> dict[str, Any]:
        return self.ledger.task(task_id).deterministic()
