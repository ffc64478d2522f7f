"""kbx.run.evaluator: one open Evaluator judging candidates through real sandboxed children on the
CPU, batch after batch on the same processes, in completion order, from asyncio too; the
device check; closing; a Backend of one's own; and where LocalBackend runs the jobs.

The real candidates (four children, a second or more each) share one evaluator (``cpu``)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Iterator

import pytest
import torch

from kbx.core.candidate import Candidate
from kbx.core.config import EvalConfig, Limits, Tuning
from kbx.core.result import Result
from kbx.run import evaluator
from kbx.run.evaluator import Evaluator, LocalBackend
from kbx.suite.verdict import SHARED_DISK_FULL, START_FAILED, Verdict
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


class FaultOnce(Recording):
    """A backend whose first evaluation of ``victim`` ends as a fault beside it would: a
    wall-clock timeout; evaluated again, it passes."""

    def __init__(self, victim: str, verdict: Verdict, detail: str, device: str = "cpu") -> None:
        super().__init__()
        self.victim, self.verdict, self.detail, self.device = victim, verdict, detail, device

    def submit(self, candidates, on_baseline=None):
        for cand in candidates:
            self.given.append(cand)
            if cand.task_id == self.victim and self.given.count(cand) == 1:
                yield cand, Result.of(cand, self.device, self.verdict, self.detail, "run")
            else:
                yield cand, Result.of(cand, self.device, Verdict.PASSED, "alone", "done")


WALL = "no progress for 41 s (wall clock) during cases 0"


def test_a_verdict_another_candidate_may_have_caused_is_judged_again_alone():
    backend = FaultOnce("Math/add", Verdict.TIMEOUT, WALL)
    with Evaluator("cpu", backend=backend) as ev:
        results = list(ev.submit([("Math/add", "x = 1"), ("Math/sub", "x = 1")]))
    assert [r.task_id for r in results] == ["Math/sub", "Math/add"]  # held back to the end
    assert [r.verdict for r in results] == [Verdict.PASSED, Verdict.PASSED]
    why = "a wall-clock timeout, which other candidates' load can cause"
    assert results[1].rerun == {"verdict": "timeout", "detail": WALL, "why": why}
    assert results[1].record()["rerun"]["verdict"] == "timeout"  # in the record too
    assert results[0].rerun is None
    assert [c.task_id for c in backend.given] == ["Math/add", "Math/sub", "Math/add"]


@pytest.mark.parametrize(
    "verdict, detail, device, again",
    [
        (Verdict.TIMEOUT, WALL, "cpu", True),
        (Verdict.TIMEOUT, "used 61 s of CPU in cases 0 (limit 60 s)", "cpu", False),
        (Verdict.OUT_OF_MEMORY, "CUDA out of memory", "cuda", True),
        (Verdict.OUT_OF_MEMORY, "MemoryError", "cpu", False),
        (Verdict.CRASHED, "illegal memory access", "cuda", False),
        (Verdict.HARNESS_ERROR, f"{START_FAILED} (exit 70): CUDA out of memory", "cuda", True),
        (Verdict.HARNESS_ERROR, f"{START_FAILED} (exit 70): no module named x", "cpu", False),
        (Verdict.HARNESS_ERROR, f"{START_FAILED} (exit 70): MemoryError", "cpu", True),
        (Verdict.HARNESS_ERROR, "ray backend: ActorDiedError", "cuda", True),
        (Verdict.HARNESS_ERROR, "OutOfMemoryError: CUDA out of memory (check.py:80)", "cuda", True),
        (Verdict.CRASHED, "exited with code 1 during cases 0: CUDA out of memory", "cuda", True),
        (Verdict.CRASHED, "process killed by SIGSEGV during cases 0", "cuda", False),
        (Verdict.HARNESS_ERROR, "OSError: [Errno 28] No space left on device", "cpu", True),
        (Verdict.CRASHED, "OSError: [Errno 28] No space left on device", "cpu", False),
        (Verdict.CRASHED, f"{SHARED_DISK_FULL} during cases 0: OSError: [Errno 28]", "cpu", True),
    ],
)
def test_which_verdicts_are_judged_again(verdict, detail, device, again):
    backend = FaultOnce("Math/add", verdict, detail, device)
    with Evaluator("cpu", backend=backend) as ev:
        result = ev.evaluate("Math/add", "x = 1")
    assert (result.rerun is not None) is again
    assert result.verdict == (Verdict.PASSED if again else verdict)


def test_off_in_the_tuning_a_suspect_verdict_stands():
    backend = FaultOnce("Math/add", Verdict.TIMEOUT, WALL)
    with Evaluator("cpu", backend=backend, tuning=Tuning(rerun_alone=False)) as ev:
        assert ev.evaluate("Math/add", "x = 1").verdict == Verdict.TIMEOUT
    assert len(backend.given) == 1


def test_a_candidate_that_sleeps_forever_times_out_again_when_alone(tmp_path):
    """Real children: the wall-clock timeout of a candidate that sleeps is its own, so the
    second evaluation, alone, gives the same verdict; an honest candidate beside it passes
    once."""
    tuning = Tuning(jobs=2, limits=Limits(import_s=30, case_s=2))
    sleeper = code("sleep_forever/Activation/gelu.py", BAD.parent / "exploits")
    with Evaluator("cpu", baselines=None, tuning=tuning) as ev:
        results = list(ev.submit([("Activation/gelu", sleeper), ("Math/add", code("Math/add.py"))]))
    assert [r.task_id for r in results] == ["Math/add", "Activation/gelu"]
    assert results[0].verdict == Verdict.PASSED and results[0].rerun is None
    assert results[1].verdict == Verdict.TIMEOUT and "(wall clock)" in results[1].detail
    assert results[1].rerun is not None and results[1].rerun["verdict"] == "timeout"


def test_a_run_folder_mkdtemp_made_is_opened_to_the_children_s_uids(tmp_path):
    """As root a sandboxed child runs as a uid of its own and opens the GPU lock's files in the
    run folder; mkdtemp's 0700 kept every child out on the H200 (harness_error for all, under
    kbx validate and the Ray actors: the run recorded in commit f71df89)."""
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    with Evaluator("cpu", perf=False, run_dir=folder) as ev:
        result = ev.evaluate("Activation/relu", (REFERENCE / "Activation" / "relu.py").read_text())
    assert result.verdict == Verdict.PASSED, result.detail
    assert folder.stat().st_mode & 0o777 == (0o755 if os.geteuid() == 0 else 0o700)
