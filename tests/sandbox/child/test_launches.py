"""The launch counter's refusal of hooks that would run candidate code inside a Triton launch
(tests/exploits/launch_hook runs the whole path)."""

from __future__ import annotations

import time

import triton
import triton.language as tl
from triton.runtime import jit

from kbx.sandbox.child import launches


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


def test_a_grid_function_runs_inside_the_candidate_range():
    entered = []

    class Range:
        def __enter__(self):
            entered.append("in")

        def __exit__(self, *exc):
            entered.append("out")

    grid = launches.owned(lambda meta: (meta["n"],), Range)
    assert grid({"n": 3}) == (3,) and entered == ["in", "out"]


def test_a_compile_ahead_of_a_gpu_launch_is_a_warm_up_call_and_is_timed():
    counter, calls = launches.LaunchCounter(), []

    def original(fn, *args, **kwargs):
        calls.append((fn, args, kwargs))
        time.sleep(0.02)

    launches.compiled(counter, original, "kernel", 1, n=2)
    launches.compiled(counter, original, "kernel", 3, warmup=True)
    assert calls == [("kernel", (1,), {"n": 2, "warmup": True}), ("kernel", (3,), {"warmup": True})]
    assert 0.04 <= counter.compile_s < 5.0 and counter.launches == 0
