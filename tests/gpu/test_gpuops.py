"""gpu_ops_locked: operations on the locked device type take the lock, a run of them one hold.

Run on the CPU by locking the "cpu" device type instead of "cuda"."""

import contextlib
import json
import threading
from pathlib import Path

import pytest
import torch

from kbx.gpu import gpulock, gpuops
from kbx.gpu.gpuops import gpu_ops_locked


def holds(lock: Path) -> list[dict]:
    log = Path(str(lock) + ".log")
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


def test_operations_in_a_row_on_the_locked_device_share_one_hold(tmp_path, monkeypatch):
    monkeypatch.setattr(gpulock, "LOG_MIN_S", 0.0)  # log every hold
    lock = tmp_path / "gpu0.lock"
    with gpu_ops_locked(str(lock), "inputs made", device_type="cpu"):
        x = torch.randn(4, 4, generator=torch.Generator().manual_seed(1))  # made there
        y = (x * x).sum()  # two more operations on it
    assert y.item() > 0
    got = holds(lock)
    assert len(got) == 1 and got[0]["what"] == "inputs made" and got[0]["mode"] == "sh"
    assert not gpulock.holding()  # let go when the block ends


def test_heavy_cpu_work_runs_between_holds_and_light_work_inside_one(tmp_path, monkeypatch):
    """The "meta" device stands for the GPU: its operations take the lock, the CPU's do not."""
    monkeypatch.setattr(gpulock, "LOG_MIN_S", 0.0)
    lock = tmp_path / "gpu0.lock"
    seen = []
    torch.randn(4, device="meta")  # its first call imports torch's Python references (0.3 s)
    with gpu_ops_locked(str(lock), "inputs made", device_type="meta"):
        torch.randn(4, device="meta")
        torch.ones(3).add_(1)  # light CPU work: the hold stays
        seen.append(gpulock.holding())
        big = torch.zeros(1 << 14)  # heavy (by the size asked for): the hold goes first
        seen.append(gpulock.holding())
        big.add_(1)
        torch.randn(4, device="meta").mul_(2)  # a second hold
        seen.append(gpulock.holding())
    assert seen == [True, False, True]
    assert len(holds(lock)) == 2 and not gpulock.holding()


def test_a_hold_is_let_go_at_cpu_work_once_it_is_old(tmp_path, monkeypatch):
    from kbx.gpu import gpuops

    monkeypatch.setattr(gpuops, "HOLD_S", 0.0)  # every hold is old at once
    lock = tmp_path / "gpu0.lock"
    with gpu_ops_locked(str(lock), "inputs made", device_type="meta"):
        torch.randn(4, device="meta")
        torch.ones(3).add_(1)  # light, but the hold is old: let go before it
        assert not gpulock.holding()


def test_a_failing_operation_lets_the_hold_go(tmp_path):
    lock = tmp_path / "gpu0.lock"
    with (
        pytest.raises(RuntimeError),
        gpu_ops_locked(str(lock), "inputs made", device_type="meta"),
    ):
        torch.randn(4, device="meta")
        torch.randn(4, device="meta") @ torch.randn(5, device="meta")
    assert not gpulock.holding()


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


def test_the_first_locked_operation_imports_nothing():
    """torch wraps a dispatch mode in a dynamo guard whose first call imports torch._dynamo
    (~800 modules, 3.5 s on the H200) in every process that uses the mode, the fork server and
    its children among them; ``LockedOps`` opts out of it."""
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "from kbx.gpu import gpuops\n"
        "n = len(sys.modules)\n"
        "with gpuops.LockedOps('', 'x', 'cuda'):\n"
        "    torch.ones(2).mul_(3)\n"
        "gpuops.preload()\n"
        "assert 'torch._dynamo' not in sys.modules and not torch.cuda.is_initialized()\n"
        "print(len(sys.modules) - n)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


def test_threads_wait_until_the_process_has_loaded():
    gpuops.begin_loading()
    waiter = threading.Thread(target=gpuops.wait_loaded)
    try:
        waiter.start()
        waiter.join(0.2)
        assert waiter.is_alive()
    finally:
        gpuops.done_loading()
    waiter.join(5)
    assert not waiter.is_alive()


def test_a_run_of_gpu_operations_makes_way_for_a_waiting_timing(tmp_path, monkeypatch):
    """Operations on the locked device in a long run: a timing that asks gets in between two
    of them, not after the whole run (the parent's checks and eager warm-ups)."""
    import threading
    import time

    from kbx.gpu import gpuops

    monkeypatch.setattr(gpulock, "LOG_MIN_S", 0.0)
    monkeypatch.setattr(gpuops, "HOLD_S", 10.0)  # only make_way lets the hold go
    lock = tmp_path / "gpu0.lock"
    started, done = threading.Event(), []

    def timing():
        started.wait(5)
        with gpulock.exclusive(str(lock), "timing"):
            done.append(time.monotonic())

    t = threading.Thread(target=timing)
    t.start()
    ops = 0
    torch.randn(4, device="meta") + 1  # first calls import torch's Python references (0.3 s)
    with gpu_ops_locked(str(lock), "check", device_type="meta"):
        x = torch.randn(4, device="meta")
        started.set()
        end = time.monotonic() + 3.0
        while time.monotonic() < end and not done:
            x = x + 1  # a GPU operation: a safe point
            ops += 1
            time.sleep(0.005)
    t.join(5)
    assert done and done[0] < end - 2.0  # within the first second of a 3 s run
    whats = sorted((h["mode"], h["what"]) for h in holds(lock))
    assert whats == [("ex", "timing"), ("sh", "check"), ("sh", "check")] and ops > 1  # split


def test_every_reference_gives_the_same_outputs_op_by_op_under_the_lock(tmp_path):
    """The parent runs each reference under the dispatch mode (``References.compute``): it must
    not change or break any task's reference, nor its comparison (run here with every CPU
    operation taking the lock, the path GPU operations take on a GPU)."""
    from kbx.evaluate import check as reference
    from kbx.evaluate import references
    from kbx.suite import load_suite

    lock = str(tmp_path / "gpu0.lock")
    for task in load_suite().values():
        case = task.cases[0]
        inputs = task.make_inputs(case, "cpu")
        plain = references.run_reference(task, inputs, case.torch_seed, "cpu")
        with gpu_ops_locked(lock, f"check {task.id}", device_type="cpu"):
            locked = references.run_reference(task, inputs, case.torch_seed, "cpu")
            # a random task's three calls: seeded, the same seed again, another seed
            other = references.run_reference(task, inputs, case.torch_seed + 1, "cpu")
            reference.verdict_on(task, inputs, plain, [locked, plain, other])
        assert not gpulock.holding(), task.id
        if task.random:  # its draws: judged by the task's checker above
            continue
        reference.compare(locked, plain, reference.EXACT)


class FakeCuda:
    """Just enough of ``torch.cuda`` to see which stream a thread works on and what it waits
    for, on a machine without a GPU."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.waits: list[object] = []
        self.current = threading.local()
        fake = self

        class Stream:
            def __init__(self, device: int) -> None:
                self.device = device

            def synchronize(self) -> None:
                fake.waits.append(self)

        @contextlib.contextmanager
        def stream(s: Stream):
            before = getattr(fake.current, "s", "default")
            fake.current.s = s
            try:
                yield
            finally:
                fake.current.s = before

        cuda = torch.cuda
        monkeypatch.setattr(cuda, "Stream", Stream)
        monkeypatch.setattr(cuda, "stream", stream)
        monkeypatch.setattr(cuda, "is_available", lambda: True)
        monkeypatch.setattr(cuda, "current_device", lambda: 0)
        monkeypatch.setattr(cuda, "device", lambda gpu: contextlib.nullcontext())
        monkeypatch.setattr(cuda, "synchronize", lambda: fake.waits.append("device"))
        monkeypatch.setattr(cuda, "current_stream", lambda: getattr(fake.current, "s", None))
