"""kbx.run.scheduler and kbx.run.plan: job threads spread over GPU slots, the parent's set-up
(torch threads, GIL switch interval, CUDA contexts), the baselines-first stage, what is handed
back at ``close``, the child's view of its GPU, and the order a run takes its tasks in.

No test here touches CUDA: the set-up steps that would (the fork server, contexts, the driver's
wait mode, core reservation) are replaced by recorders, and so is the candidate pipeline where a
test is about the scheduling, not the verdicts (those are tests/run/test_evaluator.py's)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from contextlib import nullcontext
from pathlib import Path

import pytest
import torch

from kbx.core.candidate import Candidate
from kbx.core.config import EvalConfig, Tuning
from kbx.core.result import Result
from kbx.evaluate import baselines, outcome, pipeline, references
from kbx.evaluate.baselines import BaselineCache
from kbx.gpu import budget, cores, footprint, gpuops, gpuwait
from kbx.run import scheduler, servers
from kbx.run.ahead import Ahead
from kbx.run.plan import longest_first
from kbx.run.scheduler import Scheduler
from kbx.sandbox import childenv
from kbx.sandbox.childenv import child_env
from kbx.sandbox.wire.job import ChildConfig
from kbx.suite import find
from kbx.suite.verdict import Verdict

MB = 1 << 20


@pytest.fixture(autouse=True)
def keep_process_settings():
    """A scheduler sets the parent's torch threads and GIL switch interval; other tests keep
    theirs."""
    threads, interval = torch.get_num_threads(), sys.getswitchinterval()
    yield
    torch.set_num_threads(threads)
    sys.setswitchinterval(interval)
    gpuops.done_loading()


@pytest.fixture
def gpu_setup(monkeypatch) -> list[object]:
    """A GPU scheduler's set-up without a GPU: each step that would touch the driver or the
    process's cores records itself instead."""
    done: list[object] = []

    def server(pool, cfg, slots=(), launched=None):
        done.append(("server", cfg.device, list(slots)))

    monkeypatch.setattr(servers, "start_server", server)
    monkeypatch.setattr(gpuwait, "asleep", lambda: done.append("asleep") or True)

    def reserve(self, gpus):
        done.append(("reserve", list(gpus)))
        return {}

    monkeypatch.setattr(cores.Reservation, "reserve", reserve)
    monkeypatch.setattr(gpuops, "make_context", lambda gpu: done.append(("context", gpu)))
    monkeypatch.setattr(references, "preload", lambda: done.append("preload"))
    return done


def passed(candidate: Candidate, cfg: EvalConfig) -> Result:
    return Result.of(candidate, cfg.device, Verdict.PASSED, f"on gpu {cfg.gpu}", "done")


def cands(*task_ids: str) -> list[Candidate]:
    return [Candidate(f"s{i}", t, "x") for i, t in enumerate(task_ids)]


def test_a_gpu_schedulers_start_sets_up_each_gpu_once(gpu_setup, tmp_path):
    sched = Scheduler(EvalConfig(device="cuda", run_dir=tmp_path), jobs=4, gpus=[0, 1]).start()
    try:
        for loader in [t for t in threading.enumerate() if t.name == "kbx-load"]:
            loader.join(10)  # the contexts are made in the background
        assert ("server", "cuda", [0, 1, 0, 1]) in gpu_setup  # a spare per job slot
        assert ("reserve", [0, 1]) in gpu_setup and "asleep" in gpu_setup
        # the timing cores are kept before the fork server starts: it and its children inherit
        # the other cores
        server = gpu_setup.index(("server", "cuda", [0, 1, 0, 1]))
        assert gpu_setup.index(("reserve", [0, 1])) < server
        assert [sched.place(g).lock for g in (0, 1)] == [
            str(tmp_path / f"gpu{g}.lock") for g in (0, 1)
        ]
        assert [step for step in gpu_setup if step[0] == "context"] == [
            ("context", 0),
            ("context", 1),
        ]
        assert gpu_setup[-1] == "preload"
    finally:
        sched.close()


def test_jobs_are_spread_over_the_gpus_and_their_slots_come_back(monkeypatch, gpu_setup):
    """Four jobs in flight on two GPUs are two on each; every slot is back after the batch, and
    a second batch runs on the same threads."""
    in_flight = threading.Barrier(4, timeout=10)  # the first four wait for each other
    seen: list[tuple[str, int | None]] = []
    given: list[object] = []

    def fake_evaluate(candidate, cfg, fork_servers=None):
        seen.append((candidate.source, cfg.gpu))
        given.append(fork_servers)
        if candidate.source in {"s0", "s1", "s2", "s3"}:
            in_flight.wait()
        return passed(candidate, cfg)

    monkeypatch.setattr(pipeline, "evaluate", fake_evaluate)
    sched = Scheduler(EvalConfig(device="cuda"), jobs=4, gpus=[0, 1]).start()
    try:
        batch = cands(*["Activation/gelu"] * 10)
        results = list(sched.submit(batch))
        assert sorted(c.source for c, _ in results) == sorted(c.source for c in batch)
        assert all(r.verdict == Verdict.PASSED for _, r in results)
        first_four = sorted(gpu for source, gpu in seen if source in {"s0", "s1", "s2", "s3"})
        assert first_four == [0, 0, 1, 1]
        assert {gpu for _, gpu in seen} == {0, 1}
        assert sorted(sched.slots.queue) == [0, 0, 1, 1]  # each slot handed back
        assert all(s.servers is sched.servers for s in given)  # the scheduler's own fork servers
        again = [Candidate(f"again{i}", "Math/add", "x") for i in range(2)]
        assert {c.source for c, _ in sched.submit(again)} == {"again0", "again1"}
    finally:
        sched.close()


def test_only_candidates_that_wait_for_a_job_thread_get_a_compile_stage(monkeypatch, gpu_setup):
    """Two job threads, correctness only: the first two candidates start at once and compile in
    their own children; the two behind them get compile stages while they wait (a timed run
    offers every candidate before its baselines stage)."""
    staged: list[str] = []
    release = threading.Event()

    def fake_evaluate(candidate, cfg, fork_servers=None):
        assert release.wait(10)
        return passed(candidate, cfg)

    def stage(candidate: Candidate) -> dict[str, float]:
        staged.append(candidate.source)
        if len(staged) == 2:
            release.set()
        return {"ahead": 0.0}

    monkeypatch.setattr(pipeline, "evaluate", fake_evaluate)
    sched = Scheduler(EvalConfig(device="cuda", perf=False), jobs=2, gpus=[0]).start()
    sched.ahead = Ahead(stage, 2, 10)
    try:
        batch = [Candidate(f"s{i}", "Math/add", f"x = {i}\n") for i in range(4)]
        results = list(sched.submit(batch))
        assert len(results) == 4 and sorted(staged) == ["s2", "s3"]
        assert sched.in_flight == 0
    finally:
        sched.ahead.close()
        sched.close()


def test_a_gpu_scheduler_sets_the_parents_torch_threads_for_its_checks(gpu_setup):
    torch.set_num_threads(5)
    Scheduler(EvalConfig(device="cuda"), jobs=4, gpus=[0]).start().close()
    cpus = len(os.sched_getaffinity(0))
    assert torch.get_num_threads() == max(1, cpus // scheduler.CHECK_SHARE)  # not one per core
    cfg = EvalConfig(device="cuda", tuning=Tuning(check_threads=3))
    Scheduler(cfg, jobs=4, gpus=[0]).start().close()
    assert torch.get_num_threads() == 3


def test_a_started_scheduler_hands_the_gil_over_often():
    """A job thread's short steps between system calls wait for the GIL; at CPython's 5 ms they
    held the first jobs of a two-H200 run back by seconds (``scheduler.SWITCH_S``)."""
    sys.setswitchinterval(0.005)
    sched = Scheduler(EvalConfig(device="cpu", tuning=Tuning(fork_server=False)), 2)
    assert sys.getswitchinterval() == pytest.approx(0.005)  # made, not started: unchanged
    sched.start()
    try:
        assert sys.getswitchinterval() == pytest.approx(scheduler.SWITCH_S)
    finally:
        sched.close()


def test_cached_gpu_memory_is_handed_back_at_close_not_while_results_are_read(monkeypatch):
    events: list[str] = []

    def fake_evaluate(candidate, cfg, fork_servers=None):
        events.append("job")
        return passed(candidate, cfg)

    monkeypatch.setattr(pipeline, "evaluate", fake_evaluate)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: events.append("released"))
    sched = Scheduler(EvalConfig(device="cpu", tuning=Tuning(fork_server=False)), 2).start()
    for _ in sched.submit(cands("Math/add", "Math/sub", "Math/abs")):
        assert "released" not in events  # not while results are still being read
    assert events == ["job"] * 3
    sched.close()
    assert events == ["job"] * 3 + ["released"]
    with pytest.raises(RuntimeError):
        list(sched.submit(cands("Math/add")))  # closed: its threads are gone


def test_loading_makes_each_gpus_context_and_lets_the_threads_go_even_if_it_fails(monkeypatch):
    made: list[int | None] = []
    monkeypatch.setattr(gpuops, "make_context", made.append)

    def fails() -> None:
        raise RuntimeError("no fake tensors")

    monkeypatch.setattr(references, "preload", fails)
    waiter = threading.Thread(target=gpuops.wait_loaded, daemon=True)
    gpuops.begin_loading()
    waiter.start()
    waiter.join(0.1)
    assert waiter.is_alive()  # a job thread's first torch operation waits for the loading
    with pytest.raises(RuntimeError, match="no fake tensors"):
        Scheduler(EvalConfig(device="cuda"), 4, [0, 1]).load()
    assert made == [0, 1]
    waiter.join(10)
    assert not waiter.is_alive()  # let go although the loading failed


def fake_measure(record: list[tuple[str, int | None, str | None]]):
    """A stand-in for ``Baselines.ms`` that records the task, GPU and lock of each measurement;
    Math/add's fails, as a broken reference's would."""

    def ms(self, task, kinds, place, wait=True):
        record.append((task.id, place.gpu, place.lock))
        if task.id == "Math/add":
            raise RuntimeError("eager failed")  # left to the task's job, which reports it
        return {}

    return ms


def test_baselines_first_measures_each_task_once_before_any_candidate(
    monkeypatch, gpu_setup, tmp_path
):
    measured: list[tuple[str, int | None, str | None]] = []
    events: list[str] = []
    monkeypatch.setattr(baselines.Baselines, "ms", fake_measure(measured))
    monkeypatch.setattr(baselines, "on_device", lambda gpu: nullcontext())  # no GPU here

    def fake_evaluate(candidate, cfg, fork_servers=None):
        events.append(f"job {len(measured)}")  # how many were measured when it started
        return passed(candidate, cfg)

    monkeypatch.setattr(pipeline, "evaluate", fake_evaluate)
    cfg = EvalConfig(device="cuda", run_dir=tmp_path, baseline_cache=None)
    tasks = ["Activation/gelu", "Math/add", "Activation/gelu", "Loss/kl_div", "Math/sub"]
    told: list[tuple[str, int]] = []
    sched = Scheduler(cfg, jobs=2, gpus=[0, 1]).start()
    try:
        results = list(sched.submit(cands(*tasks), lambda t, left: told.append((t, left))))
        assert sorted(task for task, _, _ in measured) == sorted(set(tasks))  # once per task
        assert {gpu for _, gpu, _ in measured} == {0, 1}
        assert all(lock == str(tmp_path / f"gpu{gpu}.lock") for _, gpu, lock in measured)
        # every job once each task of the stage has begun (the last may not have recorded
        # itself yet), Math/add's too: test_candidates_start_in_the_stages_tail_...
        assert len(events) == 5 and all(event in ("job 3", "job 4") for event in events)
        assert len(results) == 5
        assert [left for _, left in told] == [4, 3, 2, 1, 0]  # first: the stage's count
        assert sorted(task for task, _ in told[1:]) == sorted(set(tasks))
    finally:
        sched.close()
    measured.clear()
    off = Scheduler(cfg.tuned(baselines_first=False), jobs=2, gpus=[0]).start()
    try:
        assert len(list(off.submit(cands(*tasks)))) == 5
    finally:
        off.close()
    assert measured == []  # then each job's own prefetch does it (in the pipeline, faked here)


def test_candidates_start_in_the_stages_tail_those_whose_baselines_are_done_first(
    monkeypatch, gpu_setup
):
    """Two stage workers, three tasks: once Loss/kl_div, the last, has begun, the candidates
    start while it and Math/sub are still measured (each waits for a job to begin), both of
    Math/add's (done) first; theirs come last, and the stage ends while a job runs."""
    began = threading.Event()
    order: list[str] = []

    def fake_ms(self, task, kinds, place, wait=True):
        if task.id != "Math/add":
            assert began.wait(10)  # still measured when the candidates start
            order.append(f"measured {task.id}")
        return {}

    def fake_evaluate(candidate, cfg, fork_servers=None):
        order.append(candidate.task_id)
        began.set()
        time.sleep(0.05)  # the stage's last measurements end meanwhile
        return passed(candidate, cfg)

    monkeypatch.setattr(baselines.Baselines, "ms", fake_ms)
    monkeypatch.setattr(baselines, "on_device", lambda gpu: nullcontext())
    monkeypatch.setattr(pipeline, "evaluate", fake_evaluate)
    cfg = EvalConfig(device="cuda", baseline_cache=None, tuning=Tuning(baseline_workers=2))
    sched = Scheduler(cfg, jobs=1, gpus=[0]).start()
    try:
        got = list(sched.submit(cands("Math/add", "Math/sub", "Loss/kl_div", "Math/add")))
    finally:
        sched.close()
    assert len(got) == 4
    jobs = [step for step in order if not step.startswith("measured")]
    assert jobs == ["Math/add", "Math/add", "Math/sub", "Loss/kl_div"]
    assert order.index("Math/add") < order.index("measured Loss/kl_div")  # overlapped


def test_a_cancelled_run_begins_no_further_baselines(monkeypatch, gpu_setup):
    """Ctrl-C during the stage (``close(cancel=True)``): the task being measured ends, the
    stage begins none of the others and counts none of them as measured."""
    measured: list[str] = []
    measuring, go = threading.Event(), threading.Event()

    def fake_ms(self, task, kinds, place, wait=True):
        measured.append(task.id)
        measuring.set()
        assert go.wait(10)
        return {}

    monkeypatch.setattr(baselines.Baselines, "ms", fake_ms)
    monkeypatch.setattr(baselines, "on_device", lambda gpu: nullcontext())
    cfg = EvalConfig(device="cuda", baseline_cache=None, tuning=Tuning(baseline_workers=1))
    sched = Scheduler(cfg, jobs=1, gpus=[0]).start()
    progress, told = scheduler.stage.Progress(), []
    sched.staging = progress
    ids = ["Math/add", "Math/sub", "Loss/kl_div"]
    run = threading.Thread(
        target=sched.baselines, args=(ids, lambda t, n: told.append(t), progress)
    )
    run.start()
    assert measuring.wait(10)
    sched.close(cancel=True)
    go.set()
    run.join(10)
    assert not run.is_alive() and measured == ["Math/add"] and told == ["", "Math/add"]
    assert progress.begun_all.is_set() and not progress.left


def test_the_cpu_has_no_baselines_stage(monkeypatch):
    measured: list[tuple[str, int | None, str | None]] = []
    monkeypatch.setattr(baselines.Baselines, "ms", fake_measure(measured))
    monkeypatch.setattr(pipeline, "evaluate", lambda c, cfg, s=None: passed(c, cfg))
    sched = Scheduler(EvalConfig(device="cpu", tuning=Tuning(fork_server=False)), 2).start()
    try:
        assert len(list(sched.submit(cands("Math/sub", "Loss/kl_div")))) == 2
    finally:
        sched.close()
    assert measured == []  # nothing is timed on the CPU


def test_the_baselines_stage_measures_as_many_tasks_at_once_as_it_is_told(monkeypatch):
    busy: list[int | None] = []  # the GPUs of the measurements under way
    most: list[list[int | None]] = [[]]
    changed = threading.Condition()

    def fake_ms(self, task, kinds, place, wait=True):
        gpu = place.gpu
        with changed:
            busy.append(gpu)
            if len(busy) > len(most[0]):
                most[0] = sorted(busy, key=str)
            changed.notify_all()
            changed.wait_for(lambda: len(busy) >= want, timeout=0.5)  # give the others a chance
            busy.remove(gpu)
        return {}

    monkeypatch.setattr(baselines.Baselines, "ms", fake_ms)
    monkeypatch.setattr(baselines, "on_device", lambda gpu: nullcontext())
    ids = ["Activation/gelu", "Math/add", "Loss/kl_div", "Math/sub", "Reduce/sum", "Math/abs"]
    want = 2
    cfg = EvalConfig(device="cuda", tuning=Tuning(baseline_workers=2))
    Scheduler(cfg, jobs=1, gpus=[0]).baselines(ids)
    assert most[0] == [0, 0]
    most[0] = []
    Scheduler(cfg.tuned(baseline_workers=1), jobs=1, gpus=[0, 1]).baselines(ids)
    assert most[0] == [0, 1]  # one per GPU


def test_each_jobs_child_sees_only_its_slots_gpu(monkeypatch, gpu_setup, tmp_path):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    visible: list[str] = []

    def fake_evaluate(candidate, cfg, fork_servers=None):
        env = child_env(tmp_path, childenv.settings(cfg))
        visible.append(env["CUDA_VISIBLE_DEVICES"])
        return passed(candidate, cfg)

    monkeypatch.setattr(pipeline, "evaluate", fake_evaluate)
    sched = Scheduler(EvalConfig(device="cuda", perf=False), jobs=2, gpus=[0, 1]).start()
    try:
        list(sched.submit(cands(*["Math/add"] * 6)))
    finally:
        sched.close()
    assert sorted(set(visible)) == ["4", "6"]  # this parent's GPUs 0 and 1, each alone


def test_child_sees_only_its_gpu(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    env = child_env(tmp_path, ChildConfig(device="cuda", timed=True, gpu=1))
    assert env["CUDA_VISIBLE_DEVICES"] == "6"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    env = child_env(tmp_path, ChildConfig(device="cuda", timed=True, gpu=1))
    assert env["CUDA_VISIBLE_DEVICES"] == "1"


def test_child_environment_is_scrubbed(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    env = child_env(tmp_path, ChildConfig(device="cpu", timed=False))
    assert "OPENAI_API_KEY" not in env
    assert env["HOME"] == str(tmp_path) and env["TMPDIR"] == str(tmp_path)


def test_slots_take_the_gpus_in_turn_and_jobs_default_to_the_machine(monkeypatch):
    assert scheduler.slot_gpus([0, 1], 5) == [0, 1, 0, 1, 0]
    assert scheduler.slot_gpus([None], 2) == [None, None]
    monkeypatch.setattr(os, "cpu_count", lambda: 32)
    assert scheduler.default_jobs("cpu") == 32  # a child per core
    assert scheduler.default_jobs("cuda", 1) == 8  # per GPU, at most 8
    assert scheduler.default_jobs("cuda", 2) == 16
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert scheduler.default_jobs("cuda", 1) == 2  # at least 2


def test_tasks_that_took_longest_last_time_start_first(tmp_path: Path):
    cache = BaselineCache(tmp_path / "baselines.sqlite")
    todo = [Candidate(f"s/{t}", t, "x") for t in ("Math/add", "Loss/new", "LinearAlgebra/det")]
    assert longest_first(todo, cache.durations()) == todo  # nothing known: source order
    cache.put_duration("Math/add", 2.0)
    cache.put_duration("LinearAlgebra/det", 30.0)
    cache.put_duration("Math/add", 1.0)  # the last run's time replaces the earlier one
    cache.put_duration("Index/gather", 4.0)
    ordered = [c.task_id for c in longest_first(todo, cache.durations())]
    assert ordered == ["LinearAlgebra/det", "Loss/new", "Math/add"]  # unknown: the median, 4 s
    assert cache.durations() == {"Math/add": 1.0, "LinearAlgebra/det": 30.0, "Index/gather": 4.0}


def test_a_cold_run_forgets_the_baselines_but_not_the_job_times(tmp_path: Path):
    cache = BaselineCache(tmp_path / "baselines.sqlite")
    cache.put("some key", 1.5)
    cache.put_duration("Math/add", 3.0)
    cache.clear_baselines()
    assert cache.get("some key") == (False, None)
    assert cache.durations() == {"Math/add": 3.0}


def test_jobs_wait_for_room_in_their_gpus_memory_budget(monkeypatch, gpu_setup, tmp_path):
    """An injected small budget (a card measured at 1 MiB a context) and the tasks' declared
    sizes: the real pipeline reserves each job's estimate before its stages (here recorded, not
    run: they need a GPU), so that the jobs in flight never add up to more than the budget
    although four job threads would run four at once; the waits are in the results and the run
    folder's log, and the spares' contexts are held from the budget for the run's life."""
    ids = ["Math/add", "Math/sub", "Activation/relu", "Reduce/sum", "Math/abs", "Loss/mse_loss"]
    sizes = {t: footprint.job_bytes(find(t), False, MB) for t in ids}
    total = max(sizes.values()) + min(sizes.values())  # the two largest never fit together
    card = footprint.Card("fake", 64 * total, 64 * total, MB, total)
    monkeypatch.setattr(footprint, "measure", lambda gpu, cap: card)
    monkeypatch.setattr(outcome, "fingerprint", lambda device: {})  # the GPU's name: none here
    in_flight: list[str] = []
    most = [0, 0]  # tasks and bytes in flight at most
    lock = threading.Lock()

    def stages(out, task, candidate, cfg, child_cfg, ctx) -> None:
        with lock:
            in_flight.append(task.id)
            most[0] = max(most[0], len(in_flight))
            most[1] = max(most[1], sum(sizes[t] for t in in_flight))
        time.sleep(0.3)
        with lock:
            in_flight.remove(task.id)

    monkeypatch.setattr(pipeline, "stages", stages)
    cfg = EvalConfig(device="cuda", perf=False, run_dir=tmp_path)
    sched = Scheduler(cfg, jobs=4, gpus=[0]).start()
    try:
        room = budget.on(0)
        assert room.total == total and room.state()["standing"] == MB * sched.servers.spares
        results = [r for _, r in sched.submit(cands(*ids))]
    finally:
        sched.close()
    assert all(r.verdict == Verdict.PASSED for r in results), [r.detail for r in results]
    assert most[1] <= total - room.state()["standing"] or most[0] == 1
    assert 1 <= most[0] < 4  # the budget, not the four slots, bounded them
    assert any(r.stage_s.get("memory_wait", 0) > 0.1 for r in results)
    log = [json.loads(x) for x in (tmp_path / "gpu-memory.log").read_text().splitlines()]
    assert log[0]["event"] == "start" and log[0]["budget"] == total
    assert budget.on(0) is budget.UNLIMITED  # uninstalled at close
