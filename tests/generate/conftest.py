"""Fixtures of the generate tests: the loopback server, one CPU Evaluator per module, the
reference solutions as scripted replies, and a plan builder."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kbx.core.config import Tuning
from kbx.generate.config import ClientConfig, MethodConfig, RunConfig
from kbx.generate.judge import through
from kbx.generate.runner import Plan
from kbx.run.evaluator import Evaluator
from kbx.suite import find
from tests.conftest import REFERENCE
from tests.generate.server import FakeServer

TASKS = ("Math/abs", "Math/add", "Activation/relu")  # three cheap tasks on the CPU
ENTRY = re.compile(r"Define a module-level function `(\w+)`")


def reference(task_id: str) -> str:
    return (REFERENCE / f"{task_id}.py").read_text()


def task_in(prompt: str) -> str:
    """The task a kbx instruction is for, by its entry name."""
    match = ENTRY.search(prompt)
    assert match, "not a kbx instruction"
    ids = [t for t in TASKS if find(t) and find(t).entry == match.group(1)]  # type: ignore[union-attr]
    assert len(ids) == 1
    return ids[0]


def fenced(code: str) -> str:
    return f"Here is the kernel.\n```python\n{code}```\n"


@pytest.fixture
def server() -> Iterator[FakeServer]:
    srv = FakeServer()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def evaluator() -> Iterator[Evaluator]:
    with Evaluator(device="cpu", tuning=Tuning(jobs=2, compile_baseline=False)) as ev:
        yield ev


def client(url: str, **knobs: Any) -> ClientConfig:
    fast = {"backoff_min_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 5.0}
    return ClientConfig(base_url=url, model="test-model", **{**fast, **knobs})


def plan(
    method: MethodConfig, url: str, out: Path, evaluate: Any, tasks: tuple[str, ...] = TASKS
) -> Plan:
    run = RunConfig(method=method, client=client(url), device="cpu")
    chosen = [find(t) for t in tasks]
    return Plan(run, out, [t for t in chosen if t], evaluate)


def evaluate_with(ev: Evaluator) -> Any:
    return through(ev)
