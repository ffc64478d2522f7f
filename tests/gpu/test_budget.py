"""kbx.gpu.budget and kbx.gpu.footprint: a GPU's memory shared out among what kbx puts on it.
The arithmetic of the estimates and of the budget from a card; reservations that wait their turn
(real threads, an injected small budget), first come first served, one larger than the budget
alone, standing holds, reservations that never wait, a covered thread's, the guard on the card's
real free memory, and the log."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import torch

from kbx.gpu import budget, footprint
from kbx.gpu.budget import Budget
from kbx.gpu.footprint import GIB
from kbx.suite.task import Case, Inputs, Task, Tolerance

MB = 1 << 20


def fake_task(bench_mb: list[int], cases_mb: list[int] = (1,), name: str = "Fake/sized") -> Task:
    """A task whose cases declare the sizes given (``bytes_moved``: the shape's first dimension in
    MiB); nothing of it ever runs."""
    return Task(
        entry="sized",
        signature="def sized(x): ...",
        description="",
        precision="",
        reference=lambda x: x,
        make_inputs=lambda case, device: Inputs((torch.zeros(1),)),
        cases=tuple(Case((mb,), seed=i) for i, mb in enumerate(cases_mb)),
        bench=tuple(Case((mb,), seed=100 + i) for i, mb in enumerate(bench_mb)),
        flops=lambda c: 0.0,
        bytes_moved=lambda c: float(c.shape[0] * MB),
        tolerance=Tolerance(0.0, 0.0),
        id=name,
    )


def test_estimates_follow_the_declared_case_sizes():
    task = fake_task([100, 300], cases_mb=[1, 2])
    slack = footprint.ALLOCATOR_SLACK
    # a case holds what it moves and its shape's bytes (the output): ``Task.held_bytes``
    assert task.held_bytes(task.bench[1]) == 300 * MB + 300 * 4

    def mb(n: float) -> float:  # n MiB moved and n float32 elements of shape, as held
        return n * MB + n * 4

    # every input built up front (the timed run's refills too), then the largest case's calls
    assert footprint.child_bytes(task, timed=True) == int(
        (2 * mb(3) + 2 * mb(400) + 3 * mb(300)) * slack
    )
    assert footprint.child_bytes(task, timed=False) == int(
        (2 * mb(3) + mb(400) + 2 * mb(300)) * slack
    )
    assert footprint.check_bytes(task) == int(3 * mb(300) * slack)
    assert footprint.baseline_bytes(task) == int(4 * mb(300) * slack)
    assert footprint.ahead_bytes(task, task.bench[0]) == int(2 * mb(100) * slack)
    context = 500 * MB
    job = footprint.job_bytes(task, True, context)
    assert job == int(context * footprint.CONTEXT_GROWTH) + footprint.child_bytes(task, True)
    huge_check = fake_task([10] * 1 + [900])  # one large case: the check can outweigh the child
    assert footprint.job_bytes(huge_check, False, 0) >= footprint.check_bytes(huge_check)


def test_the_budget_follows_the_card_and_the_cap():
    """What kbx may use: the free memory less a share of the card kept free; a cap of 22 GiB on
    a 24 GiB card counts this process's own context too; the spares take a share of it."""
    total, context = 24 * GIB, 400 * MB
    free = total - context
    headroom = total // footprint.HEADROOM_SHARE
    assert footprint.budget_bytes(free, total, context, None) == free - headroom
    capped = footprint.budget_bytes(free, total, context, 22.0)
    assert capped == 22 * GIB - context < free - headroom
    assert footprint.budget_bytes(free, total, context, 0.1) == 0  # never below nothing
    card = footprint.Card("RTX", total, free, context, capped)
    assert footprint.spares_room(card) == capped // (footprint.SPARE_SHARE * context)
    big = footprint.Card("H100", 80 * GIB, 79 * GIB, 500 * MB, 76 * GIB)
    assert footprint.spares_room(big) >= 8  # the device's default count fits on a large card
    tiny = footprint.Card("small", 4 * GIB, 3 * GIB, 500 * MB, 1 * GIB)
    assert footprint.spares_room(tiny) == 1  # at least one


def holders(room: Budget, sizes: list[int], hold_s: float = 0.2) -> tuple[list[int], list[str]]:
    """Each size reserved by a thread of its own, held ``hold_s``; the bytes in flight at each
    grant, and the order of the grants."""
    seen: list[int] = []
    order: list[str] = []
    lock = threading.Lock()
    held = [0]

    def one(i: int, size: int) -> None:
        grant = room.reserve(size, f"job {i}")
        assert grant is not None
        with lock:
            held[0] += size
            seen.append(held[0])
            order.append(f"job {i}")
        time.sleep(hold_s)
        with lock:
            held[0] -= size
        grant.release()

    threads = []
    for i, size in enumerate(sizes):
        threads.append(threading.Thread(target=one, args=(i, size), daemon=True))
        threads[-1].start()
        time.sleep(0.02)  # they queue in this order
    for t in threads:
        t.join(20)
    return seen, order


def test_reservations_wait_while_the_budget_is_short_and_come_in_order():
    room = Budget("gpu0", 100)
    seen, order = holders(room, [60, 30, 50, 10, 100])
    assert max(seen) <= 100  # never more in flight than the budget
    assert order == [f"job {i}" for i in range(5)]  # first come, first served
    assert room.state()["active"] == 0 and room.state()["waiting"] == 0


def test_a_large_reservation_is_not_starved_by_small_ones_behind_it():
    room = Budget("gpu0", 100)
    first = room.reserve(60, "first")
    assert first is not None
    got: list[str] = []
    big = threading.Thread(target=lambda: got.append(str(room.reserve(80, "big"))), daemon=True)
    big.start()
    time.sleep(0.1)
    assert room.reserve(30, "small", wait=False) is None  # fits, but someone waits: no
    small = threading.Thread(target=lambda: got.append(room.reserve(30, "small").what), daemon=True)
    small.start()
    time.sleep(0.3)
    assert got == []  # the small one waits behind the big one although it would fit
    first.release()
    big.join(5)
    assert got and "big" in got[0]


def test_one_larger_than_the_budget_proceeds_alone_and_standing_holds_count(tmp_path):
    room = Budget("gpu0", 100, log=tmp_path / "gpu-memory.log")
    spares = room.hold(40, "spares")  # standing: the others have 60
    small = room.reserve(50, "small")
    assert room.reserve(20, "more", wait=False) is None  # 40 + 50 + 20 > 100
    huge: list[object] = []
    thread = threading.Thread(target=lambda: huge.append(room.reserve(500, "huge")), daemon=True)
    thread.start()
    time.sleep(0.3)
    assert huge == []  # not while anything else is reserved
    assert small is not None
    small.release()
    thread.join(5)
    assert huge and room.state()["active"] == 500  # alone: no deadlock
    lines = [json.loads(x) for x in (tmp_path / "gpu-memory.log").read_text().splitlines()]
    assert [x["what"] for x in lines if x["event"] == "alone"] == ["huge"]  # said in the log
    huge[0].release()  # type: ignore[attr-defined]
    spares.release()
    assert room.state() == {"standing": 0, "active": 0, "waiting": 0, "peak": 540}


def test_a_covered_thread_and_a_split_off_worker():
    """A job's reservation covers its thread's baselines; a worker started for a reservation
    keeps a context's worth of it as a standing hold after it ends."""
    room = Budget("gpu0", 100, context=10)
    job = room.reserve(70, "job")
    with room.covered():
        nested = room.reserve(500, "baselines")  # would never fit: covered, it costs nothing
        assert nested is not None and nested.nbytes == 0
    assert room.reserve(500, "baselines", wait=False) is None  # another thread's would wait
    worker = job.split(10, "baseline worker")  # type: ignore[union-attr]
    job.release()  # type: ignore[union-attr]
    assert room.state()["standing"] == 10 and room.state()["active"] == 0
    forced = nested.split(10, "worker of a covered job")  # a hold taken outright
    assert room.state()["standing"] == 20
    worker.release()
    forced.release()
    unlimited = budget.UNLIMITED.reserve(1 << 60, "anything")
    assert unlimited is not None and unlimited.nbytes == 0


def test_the_guard_holds_a_grant_back_while_the_card_is_fuller_than_counted(tmp_path):
    """The accounting has room, the card (an injected reading) has not: the grant waits, this
    process's cached blocks are handed back first, and the wait is logged."""
    free = [50]
    reclaimed: list[int] = []
    log = tmp_path / "gpu-memory.log"
    room = Budget(
        "gpu0",
        1000,
        headroom=20,
        free=lambda: free[0],
        reclaim=lambda: reclaimed.append(1),
        log=log,
    )
    first = room.reserve(10, "first")  # alone: no guard
    got: list[object] = []
    thread = threading.Thread(target=lambda: got.append(room.reserve(100, "second")), daemon=True)
    thread.start()
    time.sleep(budget.WAIT_LOGGED_S + 0.3)
    assert got == [] and reclaimed  # 50 free < 100 + 10: held back, the cache handed back
    free[0] = 500
    thread.join(5)
    assert got and got[0] is not None
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    events = [x["event"] for x in lines]
    assert "guard" in events and "wait" in events and "granted" in events
    assert all(x["gpu"] == "gpu0" and "pid" in x for x in lines)
    first.release()  # type: ignore[union-attr]


def test_a_process_installs_one_budget_per_gpu_and_samples_it(tmp_path, monkeypatch):
    monkeypatch.setattr(budget, "SAMPLE_S", 0.05)
    log = tmp_path / "gpu-memory.log"
    made = budget.install(7, lambda: Budget("gpu7", 100, free=lambda: 42, log=log))
    again = budget.install(7, lambda: pytest.fail("a second budget for the same GPU"))
    try:
        assert made is again and budget.on(7) is made
        assert budget.on(8) is budget.UNLIMITED
        time.sleep(0.3)
    finally:
        budget.uninstall(7)
        assert budget.on(7) is made  # the other user still has it
        budget.uninstall(7)
    assert budget.on(7) is budget.UNLIMITED
    events = [json.loads(x) for x in Path(log).read_text().splitlines()]
    assert any(e["event"] == "sample" and e["free"] == 42 for e in events)
    assert events[-1]["event"] == "end"
