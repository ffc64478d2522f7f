"""kbx.run.workers: a run's job slots split across worker processes, their share of a GPU's
spares and look-ahead, and real workers on the CPU evaluating a run, where the candidate of a
worker that died is kbx's fault while the other worker goes on."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from kbx.core.candidate import Candidate
from kbx.core.config import EvalConfig, Limits, Tuning
from kbx.gpu import cores
from kbx.run import workers
from kbx.run.evaluator import Evaluator
from kbx.run.plan import run_eval
from kbx.run.workers import Workers
from kbx.sandbox.servers import SPARES
from kbx.suite.verdict import Verdict
from tests.conftest import REFERENCE

LIMITS = Limits(import_s=60, case_s=60)


def test_each_worker_gets_whole_gpus_when_it_can():
    assert workers.split_slots([0, 1], 4, 2) == [[0, 0], [1, 1]]
    assert workers.split_slots([0, 1], 6, 4) == [[0, 0], [1, 1], [0], [1]]
    assert workers.split_slots([None], 5, 2) == [[None] * 3, [None] * 2]
    assert workers.split_slots([0], 2, 3) == [[0], [0]]  # no worker without a slot
    assert [workers.crowded([[0, 0], [1, 1]], p) for p in ([0, 0], [1, 1])] == [False, False]
    assert workers.crowded([[0], [0]], [0])  # two workers on GPU 0: they give memory back
    assert workers.worker_slots([1, 1, 1]) == [1, 1, 1]


def test_the_workers_of_a_gpu_share_its_spares_with_at_least_two_each():
    def cfg(spares: int | None) -> EvalConfig:
        return EvalConfig(device="cuda", tuning=Tuning(spares=spares))

    assert workers.spares_each(cfg(4), [0, 1], 2) == 4  # a worker per GPU: all of its spares
    assert workers.spares_each(cfg(4), [0], 2) == 2
    assert workers.spares_each(cfg(4), [0], 4) == workers.MIN_SPARES
    assert workers.spares_each(cfg(0), [0], 4) == 0  # spares off stay off
    assert workers.spares_each(cfg(None), [0], 1) == SPARES["cuda"]  # the device's default


def test_the_workers_of_a_gpu_share_its_reference_look_ahead():
    assert workers.per_gpu([0, 1], 2) == 1  # a worker per GPU: all of it
    assert workers.per_gpu([0], 4) == 4
    assert workers.per_gpu([0, 1], 1) == 1


@pytest.fixture
def keep_switch_interval():
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


def started_pid(pool: Workers, task_id: str, wait_s: float = 120.0) -> int:
    """The pid of the worker that has started the candidate for ``task_id``, once one has."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        with pool.lock:
            numbers = [n for n, (_, c) in pool.waiting.items() if c.task_id == task_id]
            pid = pool.started.get(numbers[0]) if numbers else None
        if pid is not None:
            return pid
        time.sleep(0.05)
    raise AssertionError(f"no worker started {task_id} in {wait_s} s")


def test_a_run_over_worker_processes_judges_every_candidate_even_when_a_worker_dies(
    tmp_path: Path, monkeypatch, keep_switch_interval
):
    """Two spawned workers with a job slot each, real sandboxed children: every reference
    solution passes and a bad candidate is judged as in one process; the worker killed during
    a candidate makes that one kbx's fault while the other evaluates the rest, this run's and
    later batches; once none is left, what is left is reported, not awaited.  The parent, which
    runs no job thread, keeps its GIL switch interval, and on the CPU keeps no core for timings
    (one worker start-up for all of it: a few seconds each)."""
    monkeypatch.setattr(workers, "POLL_S", 0.1)
    source = tmp_path / "src"
    (source / "Math").mkdir(parents=True)
    for task in ("Math/add", "Math/sub"):
        (source / f"{task}.py").write_text((REFERENCE / f"{task}.py").read_text())
    (source / "Math" / "mul.py").write_text((REFERENCE / "Math" / "add.py").read_text())
    slow = "import time\ntime.sleep(15)\n" + (REFERENCE / "Math" / "abs.py").read_text()
    (source / "Math" / "abs.py").write_text(slow)  # first in source order; its worker is killed
    reserved: list[object] = []
    monkeypatch.setattr(cores.Reservation, "reserve", lambda self, gpus: reserved.append(gpus))
    sys.setswitchinterval(0.005)
    out = tmp_path / "run"
    tuning = Tuning(jobs=2, procs=2, limits=LIMITS)
    with Evaluator("cpu", run_dir=out, baselines=None, tuning=tuning) as ev:
        pool = ev.backend.runner  # type: ignore[union-attr]
        assert isinstance(pool, Workers) and len(pool.procs) == 2
        assert pool.cfg.tuning.ahead_bytes == Tuning().ahead_bytes // 2  # two on one "GPU"
        summary: dict[str, object] = {}
        run = threading.Thread(
            target=lambda: summary.update(run_eval(source, out, ev)), daemon=True
        )
        run.start()
        victim = started_pid(pool, "Math/abs")
        assert victim in {w.pid for w in pool.procs}
        os.kill(victim, signal.SIGKILL)  # a worker this test started
        run.join(180)
        assert not run.is_alive() and summary
        later = Candidate("later", "Math/sub", (REFERENCE / "Math" / "sub.py").read_text())
        assert [r.verdict for r in ev.submit([later])] == [Verdict.PASSED]  # it goes on
        for w in pool.procs:
            if w.is_alive():
                os.kill(w.pid, signal.SIGKILL)  # the last one too
                w.join()
        again = Candidate("again", "Math/sub", later.code + "# not a twin of the one above\n")
        rest = list(ev.submit([again]))  # a twin would be answered from the first (``twins``)
        assert [r.verdict for r in rest] == [Verdict.HARNESS_ERROR]
        assert "had all ended before this candidate" in rest[0].detail
    assert sys.getswitchinterval() == pytest.approx(0.005)
    assert reserved == []
    records = {
        r["task_id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())
    }
    assert {task: r["verdict"] for task, r in records.items()} == {
        "Math/abs": "harness_error",
        "Math/add": "passed",
        "Math/sub": "passed",
        "Math/mul": "no_entry",  # add's file under mul's name: no function mul
    }
    assert "ended during this candidate (exit -9)" in records["Math/abs"]["detail"]
    log = Path(records["Math/abs"]["detail"].rsplit("(its log: ", 1)[1].rstrip(")"))
    assert log.parent == out / "logs" and log.exists()  # its streams went there, not here
    assert records["Math/abs"]["stage"] == "run"


def test_a_worker_killed_while_its_job_threads_wait_for_work_blocks_no_other_worker(
    tmp_path: Path, monkeypatch
):
    """Two workers with two job slots each, every thread idle: one worker is killed, and the
    candidates submitted at once, some handed to it before the parent sees it gone, are all
    judged by the other.  With one queue shared by every worker, an idle thread of the killed one
    could hold the queue's cross-process read lock for good, and nothing was judged again."""
    monkeypatch.setattr(workers, "POLL_S", 0.1)
    monkeypatch.setattr(cores.Reservation, "reserve", lambda self, gpus: None)
    tuning = Tuning(jobs=4, procs=2, limits=LIMITS)
    with Evaluator("cpu", run_dir=tmp_path / "run", baselines=None, tuning=tuning) as ev:
        pool = ev.backend.runner  # type: ignore[union-attr]
        assert isinstance(pool, Workers) and pool.slots == [2, 2]
        victim = pool.procs[0]
        deadline = time.monotonic() + 120
        while len(pool.ready) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # every job thread waits for its first candidate
        os.kill(victim.pid, signal.SIGKILL)  # type: ignore[arg-type]
        code = (REFERENCE / "Math" / "add.py").read_text()
        batch = [Candidate(f"c{i}", "Math/add", code + f"# {i}\n") for i in range(4)]
        results = list(ev.submit(batch))
        assert [r.verdict for r in results] == [Verdict.PASSED] * 4
        assert not victim.is_alive() and pool.procs[1].is_alive()
        assert not pool.handed and not pool.pending
