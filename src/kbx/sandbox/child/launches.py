"""Triton launches in the candidate's child: each goes through kbx's launch gate, which counts it
(a candidate must launch at least one), refuses one that is not Triton work, marks it in the op
recorder's session, and on the GPU takes it through the per-GPU lock, compilation kept outside.

The gate is a generator: what it keeps (the counts, the refusals, the recorder's marks, Triton's
own launch method) lives in its suspended frame, which the guard keeps from candidate code
(``gi_frame``).  Triton's ``run`` methods are replaced by ``bound.sealed`` functions whose globals
are empty and whose one closure cell holds the gate: a candidate that reaches them (their
``__closure__`` is not audited) can only ask for a launch, which is checked like any other.
Before this design a candidate read the counter, the recorder and its ranges out of that closure
(``tests/exploits/closure_counter``).

In the CPU interpreter a launch is Triton work only if the kernel's body, and each device
function's it names, reach nothing outside ``triton.language`` and its arguments are tensors,
numbers, dtypes or kernels (``interp.triton_only``); the gate runs the very function it checked.
A refused launch raises in the candidate's call and is kept: the call is ``no_triton`` whatever
the candidate does with the exception.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import time
from typing import Any

import torch

from kbx.gpu.gpulock import covered, exclusive, locked, shared
from kbx.sandbox.child import bound, handling, interp, libdevice, pristine


class LaunchCounter:
    """The gate's counts, for kbx's own tools (``audit``, ``scripts/op_census.py``); the child
    reads ``state`` (a dict) rather than these attributes."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state
        self.kernels: set[str] = state["kernels"]
        self.required = True  # off only when kbx validates a task's own PyTorch reference

    @property
    def launches(self) -> int:
        return int(self.state["launches"])

    @property
    def depth(self) -> int:
        return int(self.state["depth"])


def new_state() -> dict[str, Any]:
    """The gate's record: launches let through, launches in progress, the kernels' names, why
    launches were refused, and the wall seconds of compiles (and cache loads) ahead of GPU
    launches (``compile_s``: the throughput benchmark's compile figure)."""
    return {
        "launches": 0, "depth": 0, "kernels": set(), "refused": [], "compile_s": 0.0,
        "numbers": set(), "allow": 1 << 62,
    }  # fmt: skip


def count_values(
    state: dict[str, Any], args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any = None
) -> None:
    """The values a launch hands its kernel (``handling.argument_values``), its numbers kept
    for the case (``state["numbers"]``, by value).  More than ``WIDEST`` values to one launch,
    or more distinct numbers in a case than it allows (``state["allow"]``, set by the child
    for each case from its inputs' size), is host data handed to kernels in bulk: the launch
    is refused, and the call is ``no_triton``.  While kbx times (``allow`` None) nothing is
    counted: no evidence is gathered then, and a timed launch's own cost stays as it was."""
    if state["allow"] is None:
        return
    kept = {k: v for k, v in kwargs.items() if k not in LAUNCH_KEYS}
    if _type(grid) in (tuple, list):  # its sizes reach the kernel too (``tl.num_programs``)
        kept["grid"] = grid
    n = handling.argument_values(args, kept, state["numbers"])
    distinct = len(state["numbers"])
    if n > WIDEST or distinct > state["allow"]:
        why = (
            f"{n} values handed to one kernel launch (at most {WIDEST})"
            if n > WIDEST
            else f"{distinct} distinct Python numbers handed to kernels in one case (at most"
            f" {state['allow']} for its inputs)"
        )
        state["refused"].append(f"host data handed to kernels as arguments: {why}")
        raise RuntimeError(f"kbx: {state['refused'][-1]} (not Triton work: see kbx's trust model)")


WIDEST = 64  # values one launch may hand its kernel (the reference solutions hand at most 31)
LAUNCH_KEYS = ("grid", "warmup")  # Triton's own launch arguments, not the kernel's


def _launch_code() -> Any:
    gate: Any = None

    def run(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        ok, value = gate.send((self, args, kwargs))
        if ok:
            return value
        raise value

    return run.__code__


def _extern_code() -> Any:
    gate: Any = None

    def extern(self, *args):  # type: ignore[no-untyped-def]
        ok, value = gate.send(args)
        if ok:
            return value
        raise value

    return extern.__code__


LAUNCH_CODE, EXTERN_CODE = _launch_code(), _extern_code()


def install_launch_counter(
    interpreted: bool,
    lock: str | None = None,
    marks: Any = None,
    libdevice_ranges: Any = None,
    state: dict[str, Any] | None = None,
    codes: list[Any] | None = None,
    timed: bool = True,
) -> LaunchCounter:
    """Every Triton kernel launch (compiled or interpreted) from here on goes through the gate.
    ``marks``: the recorder's draw of launch ranges (``opcheck.issuer``), one around each
    launch; ``libdevice_ranges``: its draw of libdevice ranges, around the libdevice stand-ins'
    torch work (the CPU); ``codes``: Triton's own code objects (``interp.rules``); ``timed``:
    whether the run times the candidate (how autotuning holds the GPU: ``lock_autotuner``).
    Called from frozen code (``bound``), the gates run frozen code.

    With a GPU ``lock``, a launch outside any timing compiles first (and an autotuned kernel
    compiles every config) without the lock, then runs and finishes under the shared lock: a
    compile takes seconds of CPU and must not hold up another candidate's timing, while the
    kernel itself must not overlap one."""
    from triton.runtime import jit
    from triton.runtime.jit import JITFunction

    state = state if state is not None else new_state()
    lock = None if interpreted else lock  # the interpreter runs on the CPU: nothing to share
    gates: list[tuple[Any, Any]] = [
        (JITFunction, launch_gate(JITFunction.run, state, marks, lock, jit))
    ]
    if interpreted:
        from triton.runtime.interpreter import GridExecutor, InterpretedFunction

        extern = libdevice_gate(libdevice_ranges, state)
        next(extern)
        # the interpreter's other patches from the module itself, not its frozen copy: a
        # function kbx leaves where the candidate reaches it must not lead to frozen globals
        real("interp").apply(bound.sealed(extern, EXTERN_CODE, "create_extern_elementwise"))
        rules = interp.rules(codes)
        run = interpreted_gate(GridExecutor, InterpretedFunction.rewrite, state, marks, jit, rules)
        gates.append((InterpretedFunction, run))
    for cls, gate in gates:
        next(gate)
        cls.run = bound.sealed(gate, LAUNCH_CODE, "run")
    if interpreted:  # what each launch compares the interpreter with: the gates in place
        rules.watched = interp.interpreter_namespaces(sys.modules[GridExecutor.__module__])
    if lock is not None:
        real("launches").lock_autotuner(lock, timed)
        state["launcher_cls"] = launcher_class()
    if not interpreted:
        real("launches").track_streams()
    return LaunchCounter(state)


def launcher_class() -> Any:
    """The active Triton driver's launcher class (None where there is none: no GPU)."""
    try:
        from triton.runtime.driver import driver

        return driver.active.launcher_cls
    except Exception:  # noqa: BLE001 - no launcher built ahead; the launch builds its own
        return None


def real(name: str) -> Any:
    """kbx's module ``kbx.sandbox.child.<name>`` itself (frozen code names its copies)."""
    return sys.modules[f"kbx.sandbox.child.{name}"]


def launch_gate(
    original: Any, state: dict[str, Any], marks: Any, lock: str | None, jit: Any
) -> Any:
    """The generator behind a compiled kernel's ``run``: each ``send((kernel, args, kwargs))``
    is one launch, answered with ``(True, result)`` or ``(False, exception)``."""
    answer: Any = None
    while True:
        kernel, args, kwargs = yield answer
        try:
            answer = (
                True,
                compiled_launch(kernel, args, kwargs, original, state, marks, lock, jit),
            )
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller to raise
            answer = (False, exc)


def compiled_launch(
    kernel: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    original: Any,
    state: dict[str, Any],
    marks: Any,
    lock: str | None,
    jit: Any,
) -> Any:
    warm = kwargs.get("warmup", False)
    if not warm:
        state["launches"] += 1
        count_values(state, args, kwargs, kwargs.get("grid"))
    refuse_hooks(kernel, jit)
    state["depth"] += 1
    mark = contextlib.nullcontext() if warm or marks is None else marks()
    if not warm and marks is not None:
        state["kernels"].add(getattr(getattr(kernel, "fn", None), "__name__", ""))
    try:
        with mark:
            if lock is None or covered():
                return original(kernel, *args, **kwargs)
            if warm:  # a compile alone (an autotuned config's)
                return compiled(state, original, kernel, *args, **kwargs)
            compiled(state, original, kernel, *args, **kwargs)  # unlocked
            return locked(lock, "launch", original, kernel, *args, **kwargs)
    finally:
        state["depth"] -= 1


def compiled(state: dict[str, Any], original: Any, kernel: Any, *args: Any, **kwargs: Any) -> Any:
    """``original`` called as a warm-up (Triton compiles, or loads from its cache, and launches
    nothing), then the compiled kernel's launcher built (``ready_launcher``), the wall time of
    both added to ``state["compile_s"]`` (docs/design/throughput.md)."""
    began = _monotonic()
    try:
        made = original(kernel, *args, **{**kwargs, "warmup": True})
        ready_launcher(made, state.get("launcher_cls"))
        return made
    finally:
        state["compile_s"] += _monotonic() - began


def ready_launcher(made: Any, launcher_cls: Any) -> None:
    """The launcher of a compiled kernel ``made`` built now, unlocked, where the kernel has none
    yet.  Triton 3.6 builds one per kernel signature with the C compiler at the kernel's first
    launch, tenths of a second that would otherwise fall inside the GPU lock's hold for that
    launch, or for the first autotuning config's benchmark; built here, it lands in the Triton
    cache, where that launch loads it (Triton 3.7's launcher builds nothing).  ``launcher_cls``:
    the driver's, bound before the candidate's import (``install_launch_counter``).  A failure
    here leaves the build to the launch."""
    if launcher_cls is None or getattr(made, "_run", True) is not None:
        return
    with contextlib.suppress(Exception):
        launcher_cls(made.src, made.metadata)


_monotonic, _type = time.monotonic, type


def interpreted_gate(
    executor: Any, rewrite: Any, state: dict[str, Any], marks: Any, jit: Any, rules: Any
) -> Any:
    """The generator behind an interpreted kernel's ``run``: each launch's kernel body and
    arguments are checked (``interp.checked``), and the body checked is the one run."""
    answer: Any = None
    while True:
        kernel, args, kwargs = yield answer
        try:
            answer = (
                True,
                interpreted_launch(
                    kernel, args, kwargs, executor, rewrite, state, marks, jit, rules
                ),
            )
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller to raise
            answer = (False, exc)


def interpreted_launch(
    kernel: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    executor: Any,
    rewrite: Any,
    state: dict[str, Any],
    marks: Any,
    jit: Any,
    rules: Any,
) -> Any:
    kwargs = dict(kwargs)
    grid, warm = kwargs.pop("grid", None), kwargs.pop("warmup", False)
    if warm:
        return None
    if callable(grid) and _type(kernel) in rules.kernels:  # the candidate's code: before the check
        grid = interp.grid_shape(kernel, grid, args, kwargs, rewrite)
    fn, why = interp.checked(kernel, args, kwargs, rules, rewrite)
    if why is not None:
        state["refused"].append(why)
        raise RuntimeError(f"kbx: {why} (not Triton work: see kbx's trust model)")
    state["launches"] += 1
    count_values(state, args, kwargs, grid)
    if (observe := state.get("observe")) is not None:  # kbx's audit of trusted solutions only
        observe(kernel, args, kwargs)
    refuse_hooks(kernel, jit)
    state["depth"] += 1
    if marks is not None:
        state["kernels"].add(fn.__name__)
    mark = contextlib.nullcontext() if marks is None else marks()
    try:
        with mark:
            names, hooks = vars(kernel)["arg_names"], vars(kernel)["pre_run_hooks"]
            return executor(fn, names, grid, hooks)(*args, **kwargs)
    finally:
        state["depth"] -= 1


def refuse_hooks(kernel: Any, jit: Any) -> None:
    if joined := hooks(kernel, jit):
        raise PermissionError(
            f"kbx: a candidate may not hook Triton's launches ({', '.join(joined)}; see kbx's"
            " trust model)"
        )


def libdevice_gate(draw: Any, state: dict[str, Any]) -> Any:
    """The generator behind the interpreter's libdevice hook: each ``send(args)`` computes one
    libdevice call (``libdevice.extern_elementwise``), its torch work inside kbx's libdevice
    range (``draw``: the recorder's) and the shield.  Only inside a launch the gate let through
    (``state["depth"]``): called from Python, the hook would compute torch work inside kbx's
    range, left out of the evidence; such a call is refused and makes the call ``no_triton``."""

    def in_range(fn: Any, *args: Any) -> Any:
        shield = pristine.enter()
        try:
            if draw is None:
                return fn(*args)
            with draw():
                return fn(*args)
        finally:
            pristine.leave(shield)

    answer: Any = None
    while True:
        args = yield answer
        if not state["depth"]:
            why = "a libdevice function called outside a kernel launch"
            state["refused"].append(why)
            answer = (False, RuntimeError(f"kbx: {why} (not Triton work: see kbx's trust model)"))
            continue
        try:
            answer = (True, compute(args, in_range))
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller to raise
            answer = (False, exc)


def compute(args: tuple[Any, ...], in_range: Any) -> Any:
    """One libdevice call (the interpreter's six arguments) with ``in_range`` for its torch work."""
    lib_name, lib_path, symbol, arguments, ret_type, is_pure = args
    return libdevice.extern_elementwise(
        lib_name, lib_path, symbol, arguments, ret_type, is_pure, torch_range=in_range
    )


# Triton's hooks that run code inside a launch: none is set by kbx, Triton or torch outside
# inductor, so a set one is the candidate's
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
# ... and in a run that times nothing, where the choice decides no figure: 1 ms and 5 ms
UNTIMED_WARMUP_MS = 1
UNTIMED_REP_MS = 5


def lock_autotuner(lock: str, timed: bool = True) -> None:
    """An autotuned launch benchmarks each config under its own exclusive hold, after compiling
    that config without it: one hold per config (a do_bench of ~0.1 s, ``AUTOTUNE_REP_MS``
    since) rather than one for the whole search (seconds), so that a timing elsewhere waits for
    one config at most.

    Exclusive, since the configs are timed: under a shared hold other GPU work ran beside them
    and could sway the search: the cases whose times vary most between loaded and light runs
    are of autotuned kernels (docs/design/throughput.md, GPU lock and timing turns).  In a run
    that times nothing (``timed`` off: correctness only), the choice decides no figure: each
    config is benchmarked briefly under a shared hold, beside other candidates' GPU work but
    never beside a timing, and the store keeps no choice made so (``kernels.keep``)."""
    import triton.testing
    from triton.runtime.autotuner import Autotuner

    original = Autotuner._bench
    hold = exclusive if timed else shared
    warmup, rep = (
        (AUTOTUNE_WARMUP_MS, AUTOTUNE_REP_MS) if timed else (UNTIMED_WARMUP_MS, UNTIMED_REP_MS)
    )
    short = functools.partial(triton.testing.do_bench, warmup=warmup, rep=rep)

    def bench(self: Any, *args: Any, config: Any, **meta: Any) -> Any:
        if getattr(self, "_do_bench", short) is None:  # Triton's default: the shorter budget
            self._do_bench = short
            vars(self).pop("do_bench", None)  # a benchmark cached before (a cached_property)
        if covered():
            return original(self, *args, config=config, **meta)
        with contextlib.suppress(Exception):  # best effort: a failing compile fails again below
            self.fn.run(*args, **{**meta, **config.all_kwargs(), "warmup": True})
        return locked(lock, "autotune", original, self, *args, config=config, _hold=hold, **meta)

    Autotuner._bench = bench
