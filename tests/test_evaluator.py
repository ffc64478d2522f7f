"""kbx.evaluator: one open Evaluator judging candidates through real sandboxed children on the
CPU, batch after batch on the same processes, in completion order, from asyncio too; the
device check; closing; a Backend of one's own; and where LocalBackend runs the jobs.

The real candidates (four children, a second or more each) share one evaluator (``cpu``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator

import pytest
import torch

from kbx import evaluator
from kbx.candidate import Candidate
from kbx.config import EvalConfig, Limits, Tuning
from kbx.evaluator import Evaluator, LocalBackend
from kbx.result import Result
from kbx.verdict import Verdict
from tests.conftest import BAD, REFERENCE

TUNING = Tuning(jobs=2, limits=Limits(import_s=60, case_s=60))


def code(path: str, root=REFERENCE) -> str:
    return (root / path).read_text()


def server_pids(ev: Evaluator) -> dict[tuple[str, str], int]:
    """The pids of the fork servers of the evaluator's one scheduler."""
    runner = ev.backend.runner  # type: ignore[union-attr]
    return {key: server.pid for key, server in runner.servers.servers.items()}


@pytest.fixture(scope="module")
def cpu() -> Iterator[Evaluator]:
    """One open evaluator for this module's real candidates: its fork server starts once."""
    with Evaluator("cpu", baselines=None, tuning=TUNING) as ev:
        yield ev


def test_an_open_evaluator_judges_batch_after_batch_on_the_same_processes(cpu):
    """Results come as candidates finish (a task not in the suite needs no child and overtakes
    a reference submitted before it); a later batch's children come from the fork server an
    earlier batch started."""
    good = cpu.evaluate("Math/add", code("Math/add.py"))
    assert good.verdict == Verdict.PASSED and good.source == "<api>"
    runner, first = cpu.backend.runner, server_pids(cpu)  # type: ignore[union-attr]
    assert len(first) == 1  # the CPU's server, started for this evaluator
    batch = list(cpu.submit([("Math/sub", code("Math/sub.py")), ("Math/nope", "x = 1")]))
    assert [r.verdict for r in batch] == [Verdict.UNKNOWN_TASK, Verdict.PASSED]
    bad = Candidate("mine", "Activation/relu", code("mismatch/Activation/relu.py", BAD))
    pairs = list(cpu.pairs([bad]))
    assert pairs[0][0] is bad and pairs[0][1].verdict == Verdict.MISMATCH
    assert "differ" in pairs[0][1].detail  # says what differs
    assert cpu.backend.runner is runner  # type: ignore[union-attr]
    assert server_pids(cpu) == first


def test_the_async_forms_leave_the_event_loop_free(cpu):
    async def main() -> tuple[Result, list[Result], int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticker = asyncio.create_task(tick())
        one = await cpu.aevaluate("Math/rsqrt", code("Math/rsqrt.py"))
        seen = ticks
        no_code = code("no_code/Activation/gelu.py", BAD)
        more = [r async for r in cpu.asubmit([("Math/nope", "x"), ("Activation/gelu", no_code)])]
        ticker.cancel()
        return one, more, seen

    one, more, ticks = asyncio.run(main())
    assert one.verdict == Verdict.PASSED
    assert sorted(r.verdict for r in more) == sorted([Verdict.UNKNOWN_TASK, Verdict.NO_CODE])
    assert ticks > 3  # the loop ran while the child did (none if it had been blocked)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible here")
def test_cuda_without_a_gpu_is_a_value_error_and_leaves_nothing_behind(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    with pytest.raises(ValueError, match="no CUDA GPU is visible"):
        Evaluator("cuda")
    assert list(tmp_path.iterdir()) == []  # no temporary run folder made


class Recording:
    """A Backend of the test's own: every candidate passes; what it was given is kept."""

    def __init__(self) -> None:
        self.given: list[Candidate] = []
        self.callbacks: list[object] = []
        self.closed: list[bool] = []

    def submit(
        self, candidates: Iterable[Candidate], on_baseline=None
    ) -> Iterator[tuple[Candidate, Result]]:
        self.callbacks.append(on_baseline)
        for cand in candidates:
            self.given.append(cand)
            yield cand, Result.of(cand, "cpu", Verdict.PASSED, "by the recording backend", "done")

    def close(self, cancel: bool = False) -> None:
        self.closed.append(cancel)


def no_local_backend(*args, **kwargs):
    raise AssertionError("a LocalBackend was started although a backend was given")


def test_a_backend_of_ones_own_runs_the_candidates(monkeypatch):
    monkeypatch.setattr(evaluator, "LocalBackend", no_local_backend)
    backend = Recording()

    def on_baseline(task_id: str, left: int) -> None:
        pass

    with Evaluator("cpu", backend=backend) as ev:
        scratch = ev.scratch
        assert scratch is not None and scratch.is_dir()  # no run_dir: a temporary one
        assert ev.evaluate("Math/add", "```python\ndef add(a, b): ...\n```").detail == (
            "by the recording backend"
        )
        results = list(ev.submit([("Math/sub", "x = 1")], on_baseline))
        assert [r.verdict for r in results] == [Verdict.PASSED]
    assert [c.task_id for c in backend.given] == ["Math/add", "Math/sub"]
    assert backend.given[0].code.strip() == "def add(a, b): ..."  # a model's answer, read
    assert backend.callbacks[-1] is on_baseline
    assert backend.closed == [False]
    assert not scratch.exists()  # removed at close
    ev.close()
    assert backend.closed == [False]  # again: harmless, closed once
    with pytest.raises(RuntimeError, match="closed"):
        ev.evaluate("Math/add", "x = 1")  # no new backend behind the caller's back


def test_an_error_in_the_with_block_closes_the_backend_without_finishing_its_queue(monkeypatch):
    monkeypatch.setattr(evaluator, "LocalBackend", no_local_backend)
    backend = Recording()
    with pytest.raises(KeyError), Evaluator("cpu", backend=backend):
        raise KeyError("the caller's own failure")
    assert backend.closed == [True]


def test_local_backend_has_a_worker_process_per_gpu_by_default(monkeypatch):
    made: list[tuple[str, object]] = []

    class FakeScheduler:
        def __init__(self, cfg, jobs, gpus):
            made.append(("threads", jobs))

        def start(self):
            return self

    class FakeWorkers:
        def __init__(self, cfg, jobs, gpus, procs):
            made.append(("procs", procs))

    monkeypatch.setattr(evaluator, "Scheduler", FakeScheduler)
    monkeypatch.setattr(evaluator, "Workers", FakeWorkers)

    def chosen(device: str, gpus: list[int | None], jobs: int, procs: int | None = None):
        made.clear()
        LocalBackend(EvalConfig(device=device, tuning=Tuning(procs=procs)), gpus, jobs)
        return made[0]

    assert chosen("cuda", [0, 1], 4) == ("procs", 2)
    assert chosen("cuda", [0], 4) == ("threads", 4)
    assert chosen("cpu", [None], 4) == ("threads", 4)
    assert chosen("cuda", [0, 1], 1) == ("threads", 1)  # no more processes than jobs
    assert chosen("cuda", [0], 4, procs=3) == ("procs", 3)
    assert chosen("cpu", [None], 4, procs=2) == ("procs", 2)
