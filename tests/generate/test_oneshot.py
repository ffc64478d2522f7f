"""The one-shot method end to end on the CPU over three tasks: scripted replies (two correct
reference kernels, one wrong), the evaluator, the outputs, a cached re-run with the server
stopped, and ``kbx eval`` of the round file giving the in-loop verdicts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from kbx.generate.config import OneshotConfig, preset
from kbx.generate.judge import through
from kbx.generate.runner import generate
from kbx.run.evaluator import Evaluator
from kbx.run.plan import run_eval
from tests.generate.conftest import TASKS, fenced, plan, reference, task_in
from tests.generate.server import FakeServer, prompt_of

WRONG = "import torch\n\ndef relu(input, inplace=False):\n    return input\n"


def reply(body: dict[str, Any]) -> str:
    task = task_in(prompt_of(body))
    return fenced(WRONG if task == "Activation/relu" else reference(task))


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_presets_carry_the_papers_sampling() -> None:
    model, cfg = preset("autotriton")
    assert model == "ai9stars/AutoTriton" and isinstance(cfg, OneshotConfig)
    assert (cfg.sampling.temperature, cfg.sampling.top_p) == (0.6, 0.95)
    assert cfg.sampling.max_tokens == 16_384 and preset("claude")[1].sampling.temperature == 0.0


def test_oneshot_end_to_end_replays_from_the_cache_and_kbx_eval_agrees(
    server: FakeServer, evaluator: Evaluator, tmp_path: Path
) -> None:
    server.respond = reply
    _, cfg = preset("deepseek-coder", samples=2)
    out = tmp_path / "gen"
    judged: list[str] = []

    def evaluate(candidates: list[Any]) -> list[Any]:
        judged.extend(c.task_id for c in candidates)
        return through(evaluator)(candidates)

    manifest = asyncio.run(generate(plan(cfg, server.url, out, evaluate)))
    first = (out / "round_0.jsonl").read_bytes()
    got = rows(out / "round_0.jsonl")
    assert [(r["file"], r["sample"]) for r in got] == [
        (f"{t}.py", s) for t in sorted(TASKS) for s in (0, 1)
    ]
    assert {r["method"] for r in got} == {"deepseek-coder"} and got[0]["model"] == "test-model"
    assert all(r["cost"]["calls"] == 2 and r["cost"]["tokens_out"] > 0 for r in got)
    assert manifest["config"]["method"]["samples"] == 2
    assert manifest["cost"]["total"]["calls"] == 6 and len(server.requests) == 3  # n=2 each
    assert judged == []  # one-shot has no loop: nothing is judged before the final evaluation

    server.stop()
    asyncio.run(generate(plan(cfg, server.url, out, evaluate)))
    assert (out / "round_0.jsonl").read_bytes() == first

    verdicts = eval_verdicts(out / "round_0.jsonl", evaluator, tmp_path / "eval")
    assert verdicts == {"Math/abs": "passed", "Math/add": "passed", "Activation/relu": "no_triton"}


def eval_verdicts(source: Path, evaluator: Evaluator, out: Path) -> dict[str, str]:
    run_eval(source, out, evaluator, None)
    return {r["task_id"]: r["verdict"] for r in rows(out / "results.jsonl")}
