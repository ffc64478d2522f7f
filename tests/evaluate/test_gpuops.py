"""gpu_ops_locked: only operations on the locked device type take the lock, one hold each.

Run on the CPU by locking the "cpu" device type instead of "cuda"."""

import json
from pathlib import Path

import torch

from kbx.evaluate import gpulock
from kbx.evaluate.gpuops import gpu_ops_locked


def holds(lock: Path) -> list[dict]:
    log = Path(str(lock) + ".log")
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


def test_each_operation_on_the_locked_device_takes_its_own_hold(tmp_path, monkeypatch):
    monkeypatch.setattr(gpulock, "LOG_MIN_S", 0.0)  # log every hold
    lock = tmp_path / "gpu0.lock"
    with gpu_ops_locked(str(lock), "inputs made", device_type="cpu"):
        x = torch.randn(4, 4, generator=torch.Generator().manual_seed(1))  # made there
        y = (x * x).sum()  # two more operations on it
    assert y.item() > 0
    got = holds(lock)
    assert len(got) == 3 and {h["what"] for h in got} == {"inputs made"}
    assert {h["mode"] for h in got} == {"sh"}


def test_operations_elsewhere_run_without_the_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(gpulock, "LOG_MIN_S", 0.0)
    lock = tmp_path / "gpu0.lock"
    with gpu_ops_locked(str(lock), "inputs made", device_type="cuda"):
        x = torch.linalg.matrix_norm(torch.randn(8, 8, dtype=torch.float64), ord=2)
    assert x.item() > 0 and holds(lock) == []


def test_an_operation_waits_for_a_timing_and_the_wait_is_counted(tmp_path):
    import threading
    import time

    lock = str(tmp_path / "gpu0.lock")
    held = threading.Event()

    def timing() -> None:
        with gpulock.exclusive(lock, "timing"):
            held.set()
            time.sleep(0.3)

    worker = threading.Thread(target=timing)
    worker.start()
    held.wait()
    before = gpulock.waited_s()
    with gpu_ops_locked(lock, "inputs made", device_type="cpu"):
        torch.ones(3).add_(1)  # queues behind the timing's 0.3 s
    worker.join()
    assert gpulock.waited_s() - before > 0.2


def test_every_task_builds_the_same_inputs_op_by_op_under_the_lock(tmp_path):
    """The dispatch mode must not change or break any task's make_inputs (run here with every
    CPU operation taking the lock, the path GPU operations take on a GPU)."""
    from kbx.suite import load_suite

    def flat(x):
        if isinstance(x, torch.Tensor):
            return [x]
        if isinstance(x, tuple | list):
            return [t for v in x for t in flat(v)]
        if isinstance(x, dict):
            return [t for v in x.values() for t in flat(v)]
        return [x]

    lock = str(tmp_path / "gpu0.lock")
    for task in load_suite().values():
        case = task.cases[0]
        plain = task.make_inputs(case, "cpu")
        with gpu_ops_locked(lock, "inputs made", device_type="cpu"):
            locked = task.make_inputs(case, "cpu")
        a, b = flat((plain.args, dict(plain.kwargs))), flat((locked.args, dict(locked.kwargs)))
        assert len(a) == len(b), task.id
        for x, y in zip(a, b, strict=True):
            if isinstance(x, torch.Tensor):
                assert torch.equal(x, y) or (x.is_floating_point() and x.isnan().any()), task.id
            else:
                assert repr(x) == repr(y), task.id
