"""Cost accounting: what each LLM call and each evaluator run cost, summed per task and method.

Tokens come from the server's ``usage`` (or a characters/4 estimate when it sends none, flagged);
dollars from a price table per model.  ``deterministic`` is the part a cached replay reproduces
exactly (tokens, calls, dollars, evaluator runs), which goes into each output row; latency,
retries and evaluator seconds go to the manifest and the trace.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Any

from kbx.generate.config import Price


@dataclass
class Cost:
    """One task's (or a method's) spending; replayed calls count in ``calls`` too."""

    calls: int = 0
    cached_calls: int = 0  # replayed from the cache: no network, no new spending
    failed_calls: int = 0  # still failing after the retries; their reason is in the trace
    tokens_in: int = 0
    tokens_out: int = 0
    usd: float = 0.0  # from the price table, by model
    latency_s: float = 0.0  # summed over calls, retries and backoff included
    retries: int = 0
    clamped_calls: int = 0  # max_tokens cut to the server's cap
    eval_runs: int = 0  # evaluator runs, outcomes from the cache apart
    eval_cached: int = 0
    eval_s: float = 0.0  # evaluator wall seconds on the run's device (a GPU's: its GPU time)
    eval_cpu_s: float = 0.0  # CPU seconds of the candidates' sandboxed processes

    def add(self, other: Cost) -> None:
        for key, value in asdict(other).items():
            setattr(self, key, getattr(self, key) + value)

    def deterministic(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "usd": round(self.usd, 6),
            "eval_runs": self.eval_runs + self.eval_cached,
        }


def usd(prices: dict[str, Price], model: str, tokens_in: int, tokens_out: int) -> float:
    price = prices.get(model) or prices.get("*") or Price()
    return (tokens_in * price.input_per_mtok + tokens_out * price.output_per_mtok) / 1e6


class Ledger:
    """Costs per task of one method; ``total`` sums them."""

    def __init__(self) -> None:
        self.tasks: dict[str, Cost] = defaultdict(Cost)

    def task(self, task_id: str) -> Cost:
        return self.tasks[task_id]

    def total(self) -> Cost:
        out = Cost()
        for cost in self.tasks.values():
            out.add(cost)
        return out

    def summary(self, device: str) -> dict[str, Any]:
        total = self.total()
        return {
            "total": asdict(total),
            "eval_device": device,
            "tasks": {t: asdict(c) for t, c in sorted(self.tasks.items())},
        }
