"""The launch counter's refusal of hooks that would run candidate code inside a Triton launch
(tests/exploits/launch_hook runs the whole path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import triton
import triton.language as tl
from triton.runtime import jit

from kbx.sandbox.child import launches
from tests.conftest import ROOT


@triton.jit
def _copy_one(src_ptr, dst_ptr):
    tl.store(dst_ptr, tl.load(src_ptr))


def test_no_hook_is_set_by_kbx_triton_or_torch():
    import torch  # noqa: F401  (torch's import must set none either)

    assert launches.hooks(_copy_one, jit) == []


def test_a_pre_run_hook_and_a_runtime_hook_are_found():
    def hook(*args, **kwargs):
        return None

    _copy_one.add_pre_run_hook(hook)
    runtime = triton.knobs.runtime
    chain = hasattr(runtime.launch_enter_hook, "add")
    before = runtime.launch_enter_hook
    if chain:
        runtime.launch_enter_hook.add(hook)
    else:
        runtime.launch_enter_hook = hook
    try:
        assert launches.hooks(_copy_one, jit) == [
            "pre_run_hooks",
            "launch_enter_hook",
        ]
    finally:
        _copy_one.pre_run_hooks.remove(hook)
        if chain:
            runtime.launch_enter_hook.remove(hook)
        else:
            runtime.launch_enter_hook = before
    assert launches.hooks(_copy_one, jit) == []


GATE = r"""
import json
import torch
import triton
import triton.language as tl
from triton.runtime.interpreter import InterpretedFunction
from kbx.sandbox.child import launches
from tests.conftest import ROOT

counter = launches.install_launch_counter(True)


@triton.jit
def copy_one(src_ptr, dst_ptr):
    tl.store(dst_ptr, tl.load(src_ptr))


x, y = torch.ones(1), torch.zeros(1)
copy_one[(1,)](x, y)
run = InterpretedFunction.run
cells = [type(c.cell_contents).__name__ for c in run.__closure__]
try:
    run(object(), x, y, grid=(1,), warmup=False)  # a bogus kernel: not counted
    bogus = "ran"
except RuntimeError as error:
    bogus = str(error)
print(json.dumps({
    "y": y.item(), "launches": counter.launches, "globals": sorted(run.__globals__),
    "cells": cells, "bogus": bogus, "refused": counter.state["refused"],
}))
"""


def test_the_launch_gate_counts_launches_and_lets_nothing_else_be_reached():
    """Triton's ``run`` is a sealed function: empty globals, one cell holding the gate (a
    generator, whose frame the guard keeps from candidate code); a bogus kernel is refused and
    not counted (``tests/exploits/closure_counter``, ``patch_launch_counter``)."""
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(ROOT / "src"))
    out = subprocess.run(
        [sys.executable, "-c", GATE], env=env, capture_output=True, text=True, check=True
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["y"] == 1.0 and got["launches"] == 1
    assert got["globals"] == ["__builtins__"] and got["cells"] == ["generator"]
    assert "not a Triton kernel" in got["bogus"] and len(got["refused"]) == 1


def test_a_compile_ahead_of_a_gpu_launch_is_a_warm_up_call_and_is_timed():
    """The throughput benchmark's compile figure: the warm-up call's wall time."""
    state, calls = launches.new_state(), []

    def original(fn, *args, **kwargs):
        calls.append((fn, args, kwargs))
        time.sleep(0.02)

    launches.compiled(state, original, "kernel", 1, n=2)
    launches.compiled(state, original, "kernel", 3, warmup=True)
    assert calls == [("kernel", (1,), {"n": 2, "warmup": True}), ("kernel", (3,), {"warmup": True})]
    assert 0.04 <= state["compile_s"] < 5.0 and state["launches"] == 0


def test_a_compiled_kernels_launcher_is_built_before_its_launch_takes_the_gpu_lock(tmp_path):
    """Triton 3.6 builds a launcher with the C compiler at a kernel's first launch, which came
    inside the lock's hold; the warm-up ahead of the launch builds it, unlocked, once per
    kernel that has none (one bound before the candidate's import; none: nothing built)."""
    from kbx.gpu import gpulock

    built: list[tuple[object, object, bool]] = []

    class Launcher:
        def __init__(self, src, metadata):
            built.append((src, metadata, gpulock.holding()))

    class Kernel:
        def __init__(self, run=None):
            self._run, self.src, self.metadata = run, "src", "meta"

    fresh, loaded = Kernel(), Kernel(run=print)
    state = launches.new_state() | {"launcher_cls": Launcher}
    for made in (fresh, loaded, "not a compiled kernel"):
        launches.compiled(state, lambda fn, *a, made=made, **k: made, "kernel")
    assert built == [("src", "meta", False)]  # the fresh one, outside any hold

    def failing(src, metadata):
        raise RuntimeError("no C compiler")

    launches.ready_launcher(Kernel(), failing)  # left to the launch
    launches.ready_launcher(Kernel(), None)
    lock = str(tmp_path / "gpu0.lock")
    gpulock.LOG_MIN_S, saved = 0.0, gpulock.LOG_MIN_S
    try:
        launch = launches.compiled_launch(
            "kernel", (), {}, lambda *a, **k: Kernel(), state, None, lock, None
        )
    finally:
        gpulock.LOG_MIN_S = saved
    assert isinstance(launch, Kernel) and len(built) == 2 and built[-1][2] is False


def test_a_launch_from_another_thread_inside_the_timing_turn_runs_in_it(tmp_path):
    """A candidate that launches from a worker thread and joins it inside its timed call: the
    thread's launch queued behind its own process's turn, which waited for it, and the GPU lock
    with it, for ever (every process on the GPU behind them).  It runs inside the turn."""
    from kbx.gpu import gpulock

    lock, state, ran = str(tmp_path / "gpu0.lock"), launches.new_state(), []

    def original(kernel, *args, **kwargs):
        ran.append((kernel, kwargs.get("warmup", False), gpulock.holding()))

    def worker():
        launches.compiled_launch("kernel", (), {}, original, state, None, lock, None)

    with gpulock.exclusive(lock, "timing"):
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join(10)
        assert not thread.is_alive()
    assert ran == [("kernel", False, False)]  # no warm-up, no hold of its own: the turn's
