"""One generation run: a method over the selected tasks, its outputs and its manifest.

``generate`` opens the cache, the client, the judge and the trace, runs the method's task
coroutines (at most ``task_concurrency`` at once), then writes the round files and the
manifest.  Everything blocking (the evaluator) runs in threads; the event loop only waits.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbx.core.version import __version__
from kbx.generate import oneshot
from kbx.generate.cache import Cache
from kbx.generate.client import LLM
from kbx.generate.config import GeakConfig, KernelAgentConfig, OneshotConfig, RunConfig
from kbx.generate.cost import Ledger
from kbx.generate.geak import Geak
from kbx.generate.judge import EvaluateFn, Judge
from kbx.generate.kernelagent import KernelAgent, TestRunner, run_test
from kbx.generate.outputs import Pick, Trace, write_manifest, write_rounds
from kbx.generate.session import OnStep, Session
from kbx.gpu.hardware import fingerprint
from kbx.suite.task import Task

TaskFn = Callable[[Task], Awaitable[list[Pick]]]


@dataclass
class Plan:
    run: RunConfig
    out: Path
    tasks: list[Task]
    evaluate: EvaluateFn
    api_key: str | None = None
    cache: Path | None = None  # default: OUT/cache.sqlite
    test_runner: TestRunner | None = None  # KernelAgent's own test; default: a subprocess


def method_name(run: RunConfig) -> str:
    return run.method.preset


def task_fn(
    session: Session, run: RunConfig, runner: TestRunner | None, n_tasks: int
) -> tuple[TaskFn, int]:
    """The method's coroutine for one task, and how many tasks may run at once."""
    cfg = run.method
    if isinstance(cfg, OneshotConfig):
        return (lambda task: oneshot.run_task(session, cfg, task)), max(1, n_tasks)
    if isinstance(cfg, GeakConfig):
        platform = cfg.platform or ("NVIDIA CUDA GPU" if run.device == "cuda" else "CPU")
        return Geak(session, cfg, platform).run_task, cfg.task_concurrency
    assert isinstance(cfg, KernelAgentConfig)

    async def subprocess_test(test: str, kernel: str, timeout_s: float) -> tuple[int, str, str]:
        return await run_test(test, kernel, timeout_s, run.device)

    return KernelAgent(session, cfg, runner or subprocess_test).run_task, cfg.task_concurrency


async def generate(
    plan: Plan, on_step: OnStep | None = None, on_done: Callable[[str, str], None] | None = None
) -> dict[str, Any]:
    """Runs the method over the plan's tasks; returns the manifest written to OUT.  ``on_done``
    gets each finished task and what happened to it (``Session.report``)."""
    started = time.time()
    gc.freeze()  # torch and the suite live as long as the run: no collection rescans them
    run, out = plan.run, plan.out
    out.mkdir(parents=True, exist_ok=True)
    cache = Cache(plan.cache or out / "cache.sqlite")
    llm = LLM(run.client, plan.api_key, cache)
    trace = Trace(out / "trace.jsonl")
    ledger = Ledger()
    name = method_name(run)
    judge = Judge(plan.evaluate, run.device, cache)
    session = Session(name, run.client.model, llm, judge, trace, ledger, run.prices, on_step)
    for task in plan.tasks:
        ledger.task(task.id)
    fn, at_once = task_fn(session, run, plan.test_runner, len(plan.tasks))
    slots = asyncio.Semaphore(at_once)

    async def one(task: Task) -> list[Pick]:
        async with slots:
            picks = await fn(task)
        if on_done:
            on_done(task.id, session.report(task.id))
        return picks

    try:
        picked = await asyncio.gather(*(one(t) for t in plan.tasks))
    finally:
        judge.close()
        await llm.close()
        trace.close()
        cache.close()
    seed = getattr(getattr(run.method, "sampling", None), "seed", None)
    paths = write_rounds(out, name, run.client.model, seed, [p for ps in picked for p in ps])
    manifest = {
        "kbx_version": __version__,
        "command": sys.argv,
        "method": name,
        "model": run.client.model,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "device": run.device,
        "gpu": fingerprint(run.device).get("gpu"),
        "config": run.model_dump(mode="json"),
        "api_key_set": bool(plan.api_key),
        "tasks": [t.id for t in plan.tasks],
        "rounds": [str(p) for p in paths],
        "trace": str(out / "trace.jsonl"),
        "cache": str(plan.cache or out / "cache.sqlite"),
        "most_requests_in_flight": llm.most_in_flight,
        "cost": ledger.summary(run.device),
        "errors": dict(sorted(session.errors.items())),  # task -> its last failed call's why
        "modes": dict(sorted(session.modes.items())),  # task -> GEAK's mode per round
        "started_at": started,
        "wall_s": round(time.time() - started, 3),
    }
    write_manifest(out, manifest)
    return manifest
