"""Reward shapes on result records, and each trainer adapter's example against a live
``kbx serve --device cpu``."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kbx.core.candidate import make
from kbx.core.result import Result
from kbx.rewards.shapes import Shape, discounted, reward
from kbx.suite.verdict import Verdict
from tests.serve.live import ROOT, Server

TOKEN = "reward-example-token"


def rec(verdict: str, speedup: float | None = None, stage: str = "done") -> dict[str, Any]:
    return {"verdict": verdict, "speedup": speedup, "stage": stage}


def test_correctness_only() -> None:
    assert reward(rec("passed", 3.0)) == 1.0 and reward(rec("mismatch", stage="check")) == 0.0
    assert reward(rec("harness_error")) is None
    assert reward(rec("harness_error"), Shape(harness_reward=0.0)) == 0.0


def test_log_speedup_is_clipped_and_zero_without_timing() -> None:
    shape = Shape(kind="log_speedup", speed_weight=0.5)
    assert reward(rec("passed", 2.0), shape) == pytest.approx(1 + 0.5 * math.log(2))
    assert reward(rec("passed", 0.5), shape) == pytest.approx(1 - 0.5 * math.log(2))
    assert reward(rec("passed", 1e6), shape) == pytest.approx(1 + 0.5 * math.log(10))
    assert reward(rec("passed", None), shape) == 1.0
    assert reward(rec("runtime_error", stage="run"), shape) == 0.0


def test_kernelgym_is_staged_and_penalizes_hacks() -> None:
    shape = Shape(kind="kernelgym")
    assert reward(rec("import_failed", stage="import"), shape) == 0.0
    assert reward(rec("mismatch", stage="check"), shape) == pytest.approx(0.1)
    assert reward(rec("no_triton", stage="run"), shape) == -0.5
    assert reward(rec("too_fast", stage="perf"), shape) == -0.5
    assert reward(rec("passed", 0.8), shape) == 1.0  # no bonus below eager
    assert reward(rec("passed", 1.5), shape) == pytest.approx(1.5)
    assert reward(rec("passed", 9.0), shape) == pytest.approx(3.0)  # capped


def test_kevin_is_linear_in_speedup_and_discounts_later_turns() -> None:
    shape = Shape.kevin()
    assert reward(rec("passed", 2.0), shape) == pytest.approx(2.3)
    assert reward(rec("mismatch", 2.0, "check"), shape) == 0.0
    assert discounted([0.0, 0.0, 1.3], gamma=0.4) == pytest.approx([0.208, 0.52, 1.3])


def test_a_result_object_is_rewarded_like_its_record() -> None:
    cand = make("x", "Activation/relu", "def relu(x): return x")
    result = Result.of(cand, "cpu", Verdict.PASSED, "ok", "done")
    assert reward(result) == reward(result.record()) == 1.0


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("rewards")
    (root / "tokens").write_text(TOKEN + "\n")
    server = Server(root / "state", ["--tokens", str(root / "tokens")]).start()
    yield server
    server.stop()


@pytest.mark.parametrize("example", ["verl_reward", "openrlhf_reward", "verifiers_env"])
def test_the_adapter_examples_run_against_kbx_serve(
    live: Server, example: str, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    auth = ["--token-file", str(token_file)] if example == "openrlhf_reward" else ["--token", TOKEN]
    command = [sys.executable, str(ROOT / "examples" / f"{example}.py"), "--url", live.url, *auth]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "passed" in proc.stdout or "kernel_passed': 1.0" in proc.stdout
