"""Triton launches in the candidate's child: counted (a candidate must launch at least one), and on
the GPU taken through the per-GPU lock, with compilation kept outside it and timed."""

from __future__ import annotations

import contextlib
import functools
import time
from typing import Any

import torch

from kbx.gpu.gpulock import exclusive, holding, locked


class LaunchCounter:
    def __init__(self) -> None:
        self.launches = 0
        self.depth = 0  # > 0 while inside a launch
        self.required = True  # off only when kbx validates a task's own PyTorch reference
        self.mark: Any = None  # while ops are recorded: the range around each launch (opcheck)
        self.own: Any = None  # ... and the candidate range around its grid function in one
        self.kernels: set[str] = set()  # names of the Triton kernels launched (opcheck)
        self.compile_s = 0.0  # wall seconds in compiles (and cache loads) before a GPU launch


def compiled(counter: LaunchCounter, original: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``original`` called as a warm-up (Triton compiles, or loads from its cache, and launches
    nothing), its wall time added to ``counter.compile_s``: the figure the throughput benchmark
    reports as a candidate's compile (docs/design/throughput.md)."""
    began = time.monotonic()
    try:
        return original(fn, *args, **{**kwargs, "warmup": True})
    finally:
        counter.compile_s += time.monotonic() - began


def install_launch_counter(interpreted: bool, lock: str | None = None) -> LaunchCounter:
    """Count every Triton kernel launch (compiled or interpreted) from here on.

    With a GPU ``lock``, a launch outside any timing compiles first (and an autotuned kernel
    compiles every config) without the lock, then runs and finishes under the shared lock: a
    compile takes seconds of CPU and must not hold up another candidate's timing, while the
    kernel itself must not overlap one."""
    from triton.runtime.jit import JITFunction

    counter = LaunchCounter()
    lock = None if interpreted else lock  # the interpreter runs on the CPU: nothing to share
    classes: list[Any] = [JITFunction]
    if interpreted:
        from triton.runtime.interpreter import InterpretedFunction

        from kbx.sandbox.child import interp

        interp.apply()
        classes.append(InterpretedFunction)
    for cls in classes:
        cls.run = counted(cls.run, counter, lock)
    if lock is not None:
        lock_autotuner(lock)
    if not interpreted:
        track_streams()
    return counter


def counted(original: Any, counter: LaunchCounter, lock: str | None) -> Any:
    """``original`` (a ``run`` method) counting its launches; with a GPU ``lock`` compiled
    unlocked first (timed: ``compiled``), then run under the shared lock."""

    from triton.runtime import jit  # bound once: the check below runs on every launch

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        warm = kwargs.get("warmup", False)
        if not warm:
            counter.launches += 1
        if joined := hooks(self, jit):
            raise PermissionError(
                f"kbx: a candidate may not hook Triton's launches ({', '.join(joined)}; see kbx's"
                " trust model)"
            )
        counter.depth += 1
        marked = counter.mark() if counter.mark is not None else contextlib.nullcontext()
        if counter.mark is not None:  # its GPU kernel's name, for the GPU-time share
            counter.kernels.add(getattr(getattr(self, "fn", None), "__name__", ""))
            if counter.own is not None and callable(kwargs.get("grid")):
                kwargs["grid"] = owned(kwargs["grid"], counter.own)
        try:
            with marked:
                if lock is None or holding():
                    return original(self, *args, **kwargs)
                if warm:  # a compile alone (an autotuned config's, below)
                    return compiled(counter, original, self, *args, **kwargs)
                compiled(counter, original, self, *args, **kwargs)  # unlocked
                return locked(lock, "launch", original, self, *args, **kwargs)
        finally:
            counter.depth -= 1

    return run


# Triton's hooks that run code inside a launch, where the op recorder's launch range is: none
# is set by kbx, Triton or torch outside inductor, so a set one is the candidate's
RUNTIME_HOOKS = (
    "launch_enter_hook", "launch_exit_hook", "kernel_load_start_hook", "kernel_load_end_hook",
    "jit_cache_hook", "jit_post_compile_hook", "add_stages_inspection_hook",
)  # fmt: skip


def hooks(fn: Any, jit: Any) -> list[str]:
    """The hooks set that would run inside this launch: the kernel's pre-run hooks and Triton's
    runtime hooks, read where ``JITFunction.run`` reads them (``jit``: its module), each launch
    anew (a chain of them counts once it holds one)."""
    found = ["pre_run_hooks"] if getattr(fn, "pre_run_hooks", None) else []
    runtime = getattr(getattr(jit, "knobs", None), "runtime", None)
    for name in RUNTIME_HOOKS:
        hook = getattr(runtime, name, None)
        if hook is not None and getattr(hook, "calls", True):
            found.append(name)
    return found


def owned(grid: Any, own: Any) -> Any:
    """The candidate's grid function, called inside a candidate range (``OpRecorder.candidate``):
    Triton calls it inside the launch, where the launch range would hide its torch work."""

    def called(meta: Any) -> Any:
        with own():
            return grid(meta)

    return called


def track_streams() -> None:
    """Register every CUDA stream created from here on with the clock (``clock.SIDE_STREAMS``),
    so that a timed call's end waits for the work the candidate put on them."""
    from kbx.gpu import clock

    original = torch.cuda.Stream.__new__

    def new(cls: Any, *args: Any, **kwargs: Any) -> Any:
        stream = original(cls, *args, **kwargs)
        if stream not in clock.SIDE_STREAMS:
            clock.SIDE_STREAMS.append(stream)
        return stream

    torch.cuda.Stream.__new__ = staticmethod(new)  # type: ignore[method-assign, assignment]


# Each autotuning config's benchmark (Triton's do_bench), unless the kernel names its own: 5 ms
# of warm-up and 25 ms of timed calls instead of Triton's 25 ms and 100 ms, since every config
# holds the GPU alone (docs/design/throughput.md, GPU lock and timing turns); exclusive, 25 ms
# of calls still give a stable median.
AUTOTUNE_WARMUP_MS = 5
AUTOTUNE_REP_MS = 25


def lock_autotuner(lock: str) -> None:
    """An autotuned launch benchmarks each config under its own exclusive hold, after compiling
    that config without it: one hold per config (a do_bench of ~0.1 s, ``AUTOTUNE_REP_MS``
    since) rather than one for the whole search (seconds), so that a timing elsewhere waits for
    one config at most.

    Exclusive, since the configs are timed: under a shared hold other GPU work ran beside them
    and could sway the search: the cases whose times vary most between loaded and light runs
    are of autotuned kernels (docs/design/throughput.md, GPU lock and timing turns)."""
    import triton.testing
    from triton.runtime.autotuner import Autotuner

    original = Autotuner._bench
    short = functools.partial(
        triton.testing.do_bench, warmup=AUTOTUNE_WARMUP_MS, rep=AUTOTUNE_REP_MS
    )

    def bench(self: Any, *args: Any, config: Any, **meta: Any) -> Any:
        if getattr(self, "_do_bench", short) is None:  # Triton's default: the shorter budget
            self._do_bench = short
            vars(self).pop("do_bench", None)  # a benchmark cached before (a cached_property)
        if holding():
            return original(self, *args, config=config, **meta)
        with contextlib.suppress(Exception):  # best effort: a failing compile fails again below
            self.fn.run(*args, **{**meta, **config.all_kwargs(), "warmup": True})
        return locked(
            lock, "autotune", original, self, *args, config=config, _hold=exclusive, **meta
        )

    Autotuner._bench = bench
