"""Worker processes driving a run's jobs: slots split across workers, results collected from
them, and candidates of a worker that died reported as kbx's fault."""

from __future__ import annotations

import json
import queue
from pathlib import Path

from kbx.candidate import Candidate
from kbx.evaluate.pipeline import EvalConfig
from kbx.evaluate.sandbox import Limits
from kbx.result import Result
from kbx.run import workers as procs
from kbx.run.scheduler import run_eval
from kbx.verdict import Verdict
from tests.conftest import REFERENCE


def test_each_worker_gets_whole_gpus_when_it_can():
    assert procs.split_slots([0, 1], 4, 2) == [[0, 0], [1, 1]]
    assert procs.split_slots([0, 1], 6, 4) == [[0, 0], [1, 1], [0], [1]]
    assert procs.split_slots([None], 5, 2) == [[None] * 3, [None] * 2]
    assert procs.split_slots([0], 2, 3) == [[0], [0]]  # no worker without a slot
    assert [procs.crowded([[0, 0], [1, 1]], p) for p in ([0, 0], [1, 1])] == [False, False]
    assert procs.crowded([[0], [0]], [0])  # two workers on GPU 0: they give memory back


def test_the_workers_of_a_gpu_share_its_spares_with_at_least_two_each(monkeypatch):
    monkeypatch.setenv("KBX_SPARES", "4")
    assert procs.spares_each("cuda", [0, 1], 2) == 4  # a worker per GPU: all of its spares
    assert procs.spares_each("cuda", [0], 2) == 2
    assert procs.spares_each("cuda", [0], 4) == procs.MIN_SPARES
    monkeypatch.setenv("KBX_SPARES", "0")
    assert procs.spares_each("cuda", [0], 4) == 0  # spares off stay off


def test_the_workers_of_a_gpu_share_its_reference_look_ahead(monkeypatch):
    monkeypatch.setenv("KBX_AHEAD_BYTES", str(8 << 30))
    assert procs.ahead_each([0, 1], 2) == 8 << 30  # a worker per GPU: all of it
    assert procs.ahead_each([0], 4) == 2 << 30


class FakeWorker:
    def __init__(self, pid: int, exitcode: int | None) -> None:
        self.pid, self.exitcode = pid, exitcode

    def is_alive(self) -> bool:
        return self.exitcode is None


def test_the_candidates_of_a_worker_that_died_are_harness_errors(monkeypatch):
    monkeypatch.setattr(procs, "POLL_S", 0.01)
    cands = [Candidate(f"s{i}", "Math/add", "x") for i in range(4)]
    done: queue.Queue = queue.Queue()
    ok = Result.of(cands[1], "cpu", Verdict.PASSED, "all cases match", "done")
    for msg in [("start", 0, 11), ("start", 1, 12), ("done", 1, ok), ("start", 2, 12)]:
        done.put(msg)
    workers = [FakeWorker(11, -9), FakeWorker(12, None)]  # 11 was killed running candidate 0
    got = procs.collect(cands, "cpu", workers, done)
    first = [next(got), next(got)]
    assert first[0] == (cands[1], ok)
    assert first[1][0] is cands[0]
    assert first[1][1].verdict == Verdict.HARNESS_ERROR and "exit code -9" in first[1][1].detail
    workers[1].exitcode = 1  # the last one ends too: what is left is reported, not awaited
    rest = list(got)
    assert [c.source for c, _ in rest] == ["s2", "s3"]
    assert all(r.verdict == Verdict.HARNESS_ERROR for _, r in rest)
    assert "exit code 1" in rest[0][1].detail and "all ended before" in rest[1][1].detail


def test_a_run_over_worker_processes_evaluates_every_candidate(tmp_path: Path):
    """Two spawned workers, real sandboxed children: every reference solution passes, each
    result once, and a bad candidate is judged as in one process."""
    source = tmp_path / "src"
    for task in ("Math/add", "Math/sub", "Activation/gelu"):
        (source / task).parent.mkdir(parents=True, exist_ok=True)
        (source / f"{task}.py").write_text((REFERENCE / f"{task}.py").read_text())
    (source / "Math" / "mul.py").write_text((REFERENCE / "Math" / "add.py").read_text())
    out = tmp_path / "run"
    cfg = EvalConfig(device="cpu", limits=Limits(import_s=60, case_s=60), run_dir=out)
    run_eval(source, out, cfg, 3, procs=2)
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    verdicts = {r["task_id"]: r["verdict"] for r in records}
    assert len(records) == 4
    assert verdicts == {
        "Math/add": "passed",
        "Math/sub": "passed",
        "Activation/gelu": "passed",
        "Math/mul": "no_entry",  # add's file under mul's name: no function mul
    }
