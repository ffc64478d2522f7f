"""kbx.run.rerun through a real Evaluator and real children: a child that could not start while a
neighbour ran (its interpreter out of memory at start-up, as a CUDA context on a full GPU is) is
judged again alone after the batch, and only that verdict counts; the result says it was judged
again, why, and where the first failure's trace is kept.  A candidate out of memory by itself
stays out of memory."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbx.core.candidate import Candidate
from kbx.core.config import Limits, Tuning
from kbx.core.result import Result
from kbx.run.evaluator import Evaluator
from kbx.sandbox import spawn
from kbx.suite.verdict import START_FAILED, Verdict
from tests.conftest import REFERENCE

# What the victim's interpreter meets at start-up while a neighbour runs: the message a CUDA
# context gets on a full GPU, then the exit of a process that could not set up (no kbx code has
# run: it is the interpreter's site customisation, the test's own).
STARVED = """import os, sys
sys.stderr.write(
    "Traceback (most recent call last):\\n"
    '  File "kbx/sandbox/child/main.py", line 63, in make_context\\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB (simulated: the "
    "GPU was full while a neighbour ran)\\n"
)
sys.stderr.flush()
os._exit(1)
"""


@pytest.fixture
def starved_beside_a_neighbour(tmp_path: Path, monkeypatch) -> Iterator[list[str]]:
    """Children of ``Math/sub`` that start while another child is in flight find the memory
    gone (``STARVED`` runs first in their interpreter); alone, they start as usual.  Yields the
    task of each child started, and whether it was starved."""
    site = tmp_path / "starved"
    site.mkdir()
    (site / "sitecustomize.py").write_text(STARVED)
    real_env, real_run = spawn.child_env, spawn.Child.run
    in_flight = [0]
    lock = threading.Lock()
    started: list[str] = []

    def child_env(workdir: Path, cfg):  # noqa: ANN001 - the sandbox's own signature
        env = real_env(workdir, cfg)
        task = json.loads((workdir / "job.json").read_text())["task_id"]
        with lock:
            starved = task == "Math/sub" and in_flight[0] > 1
            started.append(f"{task}{' starved' if starved else ''}")
        if starved:
            env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
        return env

    def run(self):  # noqa: ANN001, ANN202
        if self.task.id == "Math/sub" and not started:
            time.sleep(1.0)  # the neighbour's child first
        with lock:
            in_flight[0] += 1
        try:
            return real_run(self)
        finally:
            with lock:
                in_flight[0] -= 1

    monkeypatch.setattr(spawn, "child_env", child_env)
    monkeypatch.setattr(spawn.Child, "run", run)
    yield started


def test_a_child_starved_by_a_neighbour_is_judged_again_alone(tmp_path, starved_beside_a_neighbour):
    """Fresh interpreters (no fork server: its children never start a new interpreter); a
    neighbour that sleeps at import keeps a child in flight while the victim starts."""
    neighbour = "import time\ntime.sleep(4)\n" + (REFERENCE / "Math" / "add.py").read_text()
    victim = (REFERENCE / "Math" / "sub.py").read_text()
    tuning = Tuning(jobs=2, fork_server=False, limits=Limits(import_s=60, case_s=60))
    with Evaluator("cpu", run_dir=tmp_path / "run", baselines=None, tuning=tuning) as ev:
        pairs = list(ev.pairs([Candidate("n", "Math/add", neighbour), ("Math/sub", victim)]))
    results: dict[str, Result] = {c.task_id: r for c, r in pairs}
    assert [c.task_id for c, _ in pairs] == ["Math/add", "Math/sub"]  # held back to the end
    assert starved_beside_a_neighbour.count("Math/sub starved") == 1
    assert starved_beside_a_neighbour.count("Math/sub") == 1  # the second time: alone
    first, again = results["Math/sub"].rerun, results["Math/sub"]
    assert again.verdict == Verdict.PASSED, again.detail  # only the lone verdict counts
    assert first is not None and first["verdict"] == "harness_error"
    assert first["detail"].startswith(START_FAILED) and "CUDA out of memory" in first["detail"]
    assert "lack of memory" in first["why"]
    assert again.record()["rerun"] == first
    trace = Path(first["detail"].rsplit("(trace: ", 1)[1].rstrip(")"))
    assert trace.parent == tmp_path / "run" / "logs"  # the child's whole stderr, kept
    assert "Traceback (most recent call last)" in trace.read_text()
    assert results["Math/add"].verdict == Verdict.PASSED and results["Math/add"].rerun is None


class OutOfMemoryEveryTime:
    """A backend on a GPU whose candidate exhausts memory by itself: every evaluation, alone or
    not, ends out of memory."""

    def __init__(self) -> None:
        self.given: list[Candidate] = []

    def submit(self, candidates, on_baseline=None):  # noqa: ANN001, ANN201
        for cand in candidates:
            self.given.append(cand)
            detail = "CUDA out of memory. Tried to allocate 512.00 GiB (candidate.py line 9)"
            yield cand, Result.of(cand, "cuda", Verdict.OUT_OF_MEMORY, detail, "run")

    def close(self, cancel: bool = False) -> None:
        pass


def test_a_candidate_out_of_memory_by_itself_stays_out_of_memory():
    backend = OutOfMemoryEveryTime()
    with Evaluator("cpu", backend=backend) as ev:
        result = ev.evaluate("Math/add", "x = 1")
    assert result.verdict == Verdict.OUT_OF_MEMORY  # alone too: its own verdict
    assert result.rerun is not None and result.rerun["verdict"] == "out_of_memory"
    assert len(backend.given) == 2
