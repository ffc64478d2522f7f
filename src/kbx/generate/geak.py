"""GEAK (methods.md 7.2, GEAK v2's GaAgent): K candidates per round in fresh or debug mode, each
scored by the model, judged by kbx, reflected on; a pool of the fastest correct kernels guides
fresh rounds; each round's output is the best kernel so far."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Literal

from rank_bm25 import BM25Okapi

from kbx.generate import geak_prompts as prompts
from kbx.generate.config import GeakConfig, Sampling
from kbx.generate.extract import geak_reply, loads_lenient
from kbx.generate.judge import Outcome
from kbx.generate.outputs import Pick
from kbx.generate.session import Session
from kbx.suite.prompt import render
from kbx.suite.task import Task

Mode = Literal["fresh", "debug"]
REFLECTION = re.compile(r"```[ \t]*reflection[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)


@dataclass
class Attempt:
    code: str
    strategy: str = ""
    score: float = 0.0
    outcome: Outcome | None = None
    reflection: str = ""

    @property
    def exe_ok(self) -> bool:
        return bool(self.outcome and self.outcome.feedback.exe_ok)

    @property
    def call_ok(self) -> bool:
        return bool(self.outcome and self.outcome.feedback.call_ok)

    @property
    def speedup(self) -> float | None:
        return self.outcome.feedback.speedup if self.outcome else None

    @property
    def perf_ok(self) -> bool:
        return self.exe_ok and (self.speedup or 0.0) > 0

    def shown(self) -> prompts.Shown:
        fb = self.outcome.feedback if self.outcome else None
        return prompts.Shown(self.code, self.strategy, self.reflection, fb, self.speedup)


@dataclass
class State:
    """GEAK's memory of one task."""

    current: list[Attempt] = field(default_factory=list)
    lineages: list[list[Attempt]] = field(default_factory=list)
    pool: list[Attempt] = field(default_factory=list)
    last_call: str | None = None
    last_exe: str | None = None
    debug_count: int = 0
    exe_passes: int = 0  # among the current candidates after the previous round
    anything_passed: bool = False  # some candidate passed the call stage


class Corpus:
    """The one-shot corpus, BM25 over descriptions (first round) or code (debug)."""

    def __init__(self, path: Path | None) -> None:
        text = (
            path.read_text()
            if path
            else resources.files(__package__).joinpath("corpus.json").read_text()
        )
        self.items: list[dict[str, str]] = json.loads(text)
        self.by_text = BM25Okapi([words(i["description"]) for i in self.items])
        self.by_code = BM25Okapi([words(i["code"]) for i in self.items])

    def best(self, query: str, on_code: bool) -> dict[str, str]:
        index = self.by_code if on_code else self.by_text
        scores = list(index.get_scores(words(query)))
        return self.items[scores.index(max(scores))]


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_]+", text.lower())


def choose_mode(state: State, round_: int, cfg: GeakConfig) -> Mode:
    if round_ == 0 or state.exe_passes >= cfg.debug_threshold:
        return "fresh"
    return "fresh" if state.debug_count >= cfg.debug_cap else "debug"


def insert_pool(pool: list[Attempt], new: Attempt, cfg: GeakConfig) -> list[Attempt]:
    """The pool with ``new`` (perf-passing) in it, best first; at most ``pool_size``."""
    speed = new.speedup or 0.0
    if len(pool) < cfg.pool_size:
        pool = [*pool, new]
    elif cfg.faithful_pool:  # released quirk: only a new best enters, and it replaces the best
        if speed >= (pool[0].speedup or 0.0):
            pool = [new, *pool[1:]]
    elif speed > (pool[-1].speedup or 0.0):
        pool = [*pool[:-1], new]
    return sorted(pool, key=lambda a: -(a.speedup or 0.0))


def remember(state: State, slot: int, attempt: Attempt, cfg: GeakConfig) -> None:
    """A tested attempt into the memory: a snapshot into its lineage (the ``history`` best by LLM
    score), the pool when perf-passing, and the last call- and exe-passing code."""
    snapshot = Attempt(**vars(attempt))  # a copy: later rounds never rewrite history
    lineage = sorted([*state.lineages[slot], snapshot], key=lambda a: -a.score)
    state.lineages[slot] = lineage[: cfg.history]
    if attempt.perf_ok:
        state.pool = insert_pool(state.pool, snapshot, cfg)
    if attempt.call_ok:
        state.last_call = attempt.code
        state.anything_passed = True
    if attempt.exe_ok:
        state.last_exe = attempt.code


def select(state: State, fallback: str) -> tuple[str, str]:
    """The round's output and why: best pool member, last exe pass, last call pass, slot 0."""
    if state.pool:
        return state.pool[0].code, "pool best"
    if state.last_exe is not None:
        return state.last_exe, "last exe pass"
    if state.last_call is not None:
        return state.last_call, "last call pass"
    return fallback, "candidate 0"


class Geak:
    def __init__(self, session: Session, cfg: GeakConfig, platform: str) -> None:
        self.session, self.cfg, self.platform = session, cfg, platform
        self.corpus = Corpus(cfg.corpus)
        self.code_sampling = Sampling(temperature=cfg.temperature, max_tokens=cfg.code_max_tokens)
        self.reflect_sampling = Sampling(
            temperature=cfg.temperature, max_tokens=cfg.reflect_max_tokens
        )
        self.score_sampling = Sampling(temperature=cfg.temperature, max_tokens=cfg.score_max_tokens)

    def base(self, task: Task) -> str:
        signatures = [f"def {task.signature}"] if self.cfg.signatures else []
        return prompts.base(render(task), self.platform, signatures)

    async def run_task(self, task: Task) -> list[Pick]:
        state, picks = State(), []
        for r in range(self.cfg.rounds):
            mode = choose_mode(state, r, self.cfg)
            shown = "optimize" if mode == "fresh" and state.pool else mode  # fresh, guided by it
            self.session.enter(task.id, r, shown)
            self.session.step(task.id, f"round {r + 1}/{self.cfg.rounds} {shown}")
            self.session.note(task.id, "mode", round=r, mode=shown, pool=len(state.pool))
            if mode == "fresh":
                state.current, state.debug_count = [], 0
                fresh = await self.fresh(task, state, r)
            else:
                state.debug_count += 1
                fresh = await self.debug(task, state, r)
            await self.evaluate(task, state, fresh, r)
            code, why = select(state, state.current[0].code if state.current else "")
            self.session.note(task.id, "select", round=r, why=why)
            picks.append(Pick(task.id, r, code, meta={"cost": self.session.cost_so_far(task.id)}))
        return picks

    async def fresh(self, task: Task, state: State, r: int) -> list[int]:
        parts = [self.base(task)]
        if state.pool:
            parts.append(prompts.optimize([a.shown() for a in state.pool]))
        elif not state.anything_passed:
            example = self.corpus.best(task.description, on_code=False)
            parts.append(prompts.one_shot(example["description"], example["code"]))
        messages = [{"role": "user", "content": "\n\n".join([*parts, prompts.JSON_SUFFIX])}]
        k = self.cfg.candidates
        samples = range(r * k, (r + 1) * k)
        replies = await self.session.ask(task.id, "generate", messages, self.code_sampling, samples)
        state.current = [self.parse(task, reply.text) for reply in replies]
        state.lineages = state.lineages or [[] for _ in range(k)]
        return list(range(k))

    async def debug(self, task: Task, state: State, r: int) -> list[int]:
        example = self.corpus.best(state.current[0].code, on_code=True)
        slots = [i for i, a in enumerate(state.current) if not a.perf_ok]

        async def one(i: int) -> Attempt:
            lineage = [a.shown() for a in state.lineages[i]]
            content = "\n\n".join(
                [
                    self.base(task),
                    prompts.one_shot(example["description"], example["code"]),
                    prompts.history(lineage),
                    prompts.JSON_SUFFIX,
                ]
            )
            sample = r * self.cfg.candidates + i
            messages = [{"role": "user", "content": content}]
            (reply,) = await self.session.ask(
                task.id, "debug", messages, self.code_sampling, [sample]
            )
            return self.parse(task, reply.text)

        for i, attempt in zip(slots, await asyncio.gather(*map(one, slots)), strict=True):
            state.current[i] = attempt
        return slots

    def parse(self, task: Task, text: str) -> Attempt:
        strategy, code, how = geak_reply(text, self.cfg.fence_fallback)
        self.session.note(task.id, "extracted", how=how, code=code)
        return Attempt(code=code, strategy=strategy)

    async def evaluate(self, task: Task, state: State, slots: list[int], r: int) -> None:
        """Score, test and reflect on the new candidates of ``slots``, then update the memory."""
        new = [state.current[i] for i in slots]
        if self.cfg.llm_scoring:
            scores = await asyncio.gather(
                *(self.score(task, a, r, i) for i, a in zip(slots, new, strict=True))
            )
            for attempt, value in zip(new, scores, strict=True):
                attempt.score = value
        outcomes = await self.session.test(task.id, [a.code for a in new], {"round": r})
        for attempt, outcome in zip(new, outcomes, strict=True):
            attempt.outcome = outcome
        reflections = await asyncio.gather(
            *(
                self.reflect(task, a, state.lineages[i], r, i)
                for i, a in zip(slots, new, strict=True)
            )
        )
        for i, attempt, reflection in zip(slots, new, reflections, strict=True):
            attempt.reflection = reflection
            remember(state, i, attempt, self.cfg)
        state.exe_passes = sum(a.exe_ok for a in state.current)  # kept slots count too

    async def score(self, task: Task, attempt: Attempt, r: int, slot: int) -> float:
        messages = [
            {"role": "user", "content": prompts.score(render(task), attempt.code, self.platform)}
        ]
        sample = r * self.cfg.candidates + slot
        (reply,) = await self.session.ask(task.id, "score", messages, self.score_sampling, [sample])
        parsed = loads_lenient(reply.text[reply.text.find("{") : reply.text.rfind("}") + 1])
        if not isinstance(parsed, dict):
            return 0.0
        return float(sum(v for v in parsed.values() if isinstance(v, int | float)))

    async def reflect(
        self, task: Task, attempt: Attempt, lineage: list[Attempt], r: int, slot: int
    ) -> str:
        content = prompts.reflect(render(task), attempt.shown(), [a.shown() for a in lineage])
        sample = r * self.cfg.candidates + slot
        messages = [{"role": "user", "content": content}]
        (reply,) = await self.session.ask(
            task.id, "reflect", messages, self.reflect_sampling, [sample]
        )
        match = REFLECTION.search(reply.text)
        return (match.group(1) if match else reply.text).strip()
