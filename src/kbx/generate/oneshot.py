"""The one-shot methods (methods.md 7.1): AutoTriton, Claude and DeepSeek-Coder are presets of
one loop-free method: the instruction as one user message, one call per task and sample, code
taken with ``kbx_first_fence``."""

from __future__ import annotations

from typing import Any

from kbx.generate.config import OneshotConfig
from kbx.generate.extract import extract
from kbx.generate.outputs import Pick
from kbx.generate.session import Session
from kbx.suite.prompt import render
from kbx.suite.task import Task


async def run_task(session: Session, cfg: OneshotConfig, task: Task) -> list[Pick]:
    messages = [{"role": "user", "content": render(task)}]
    session.step(task.id, f"{cfg.samples} sample(s)")
    replies = await session.ask(task.id, "generate", messages, cfg.sampling, range(cfg.samples))
    picks = []
    for sample, reply in enumerate(replies):
        code = extract(reply.text, cfg.extraction)
        session.note(task.id, "extracted", sample=sample, code=code, error=reply.error)
        meta: dict[str, Any] = {"cost": session.cost_so_far(task.id)}
        if reply.error:
            meta["error"] = reply.error
        picks.append(Pick(task.id, 0, code, sample, meta))
    return picks
