"""The trusted process that times the PyTorch baselines (eager, ``torch.compile``) of one task.

Runs as a process of its own, never in the parent: ``python -m kbx.evaluate.baseline_worker
TASK_ID KINDS CASES LOCK [CORE]`` prints one JSON object ``{"<case>:<kind>": ms or null}`` (with
``"<case>:<kind>_lo"`` and ``_hi``, the ends of the median's 95% interval), and
with ``--serve`` it answers such requests one per line (``compile_pool``), task after task.
torch.compile's tracing is neither thread-safe nor free of the GIL, and eager's timed calls in
the parent waited on the GIL behind its job threads (``baselines.in_worker``); a process per task
in flight lets several tasks compile at once without sharing dynamo's state (reset before each
compile).  Only kbx and torch are imported here, never a candidate.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any

import torch

from kbx.gpu import gpuwait
from kbx.gpu.benchtime import time_case
from kbx.gpu.clock import Timing
from kbx.gpu.gpulock import exclusive, holding, locked, shared
from kbx.gpu.gpuops import gpu_ops_locked
from kbx.sandbox.childenv import process_cpu_s
from kbx.suite import find
from kbx.suite.task import Inputs, Task
from kbx.suite.tensors import fresh_arguments, full_fp32


def measure(
    task: Task,
    index: int,
    kind: str,
    lock: str | None,
    inputs: Inputs | None = None,
    core: int | None = None,
) -> Timing | None:
    """One baseline on one benchmark case, timed with the candidates' timing engine.

    torch.compile compiles on a first call without the lock (seconds of CPU), then runs its
    graph under an exclusive hold (``compiled``).  Both kinds warm up
    under the shared lock, alongside other GPU work, and take the exclusive lock only for their
    timed calls; the warm-up makes way for a waiting timing between its calls
    (``clock.warm_up``), never inside one, whose duration decides how the case is timed.  A
    reference that torch.compile cannot handle gives None."""
    case = task.bench[index]
    if inputs is None:
        inputs = case_inputs(task, index, lock)
    fn: Callable[..., Any] = task.reference
    try:
        with torch.no_grad():
            if kind == "compile":
                torch._dynamo.reset()
                fn = compiled(task.reference, lock)
                with gpu_ops_locked(lock, "compile inputs"):
                    args, kwargs = fresh_arguments(inputs)
                fn(*args, **kwargs)  # compiles unlocked; its graph's first run is locked
            timing, _, _ = time_case(
                task,
                case,
                inputs,
                fn,
                final=False,
                warm_hold=lambda: shared(lock, f"{kind} warm-up"),
                turn=lambda: exclusive(lock, f"{kind} {task.id}", core),
            )
    except Exception:
        if kind == "eager":
            raise
        return None
    return timing


def compiled(reference: Callable[..., Any], lock: str | None) -> Callable[..., Any]:
    """``torch.compile`` of the reference in its default mode (inductor, its default settings,
    static shapes), whose compiled graphs run under the GPU lock: a graph's first run, outside
    the timing engine's holds, takes an exclusive hold, since inductor benchmarks its kernels'
    configs then to pick one (and may build cuBLAS and cuDNN state).  Compiling, the CPU's part,
    stays outside the lock: with one compile thread (``baselines.ONE_THREAD``), inductor compiles
    every kernel while it builds the graph, before that first run.

    Unlocked, those first runs could overlap other processes' timings and slow them
    (docs/design/throughput.md, Baselines)."""
    from torch._dynamo import lookup_backend

    inductor = lookup_backend("inductor")

    def backend(graph: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        run = inductor(graph, example_inputs)
        if lock is None:
            return run

        def locked_run(*args: Any) -> Any:
            if holding():  # a warm-up's or a timing's hold already covers it
                return run(*args)
            return locked(lock, "compile first run", run, *args, _hold=exclusive)

        return locked_run

    return torch.compile(reference, dynamic=False, backend=backend)


def case_inputs(task: Task, index: int, lock: str | None) -> Inputs:
    with gpu_ops_locked(lock, "baseline inputs"):  # GPU work: not during another's timing
        return task.make_inputs(task.bench[index], "cuda")


def measure_all(
    task_id: str, kinds: str, cases: str, lock: str, core: str = ""
) -> dict[str, float | None]:
    """Each case's inputs are built once for all its kinds (seconds of float64 CPU work for
    the linear-algebra tasks); every call gets fresh copies of them.  ``core``: where the
    timing turns run (``cores``; empty: where the process is)."""
    timing_core = int(core) if core else None
    task = find(task_id)
    if task is None:
        raise ValueError(f"no task {task_id}")
    out: dict[str, float | None] = {}
    for index in (int(i) for i in cases.split(",")):
        inputs = case_inputs(task, index, lock or None)
        for kind in kinds.split(","):
            timing = measure(task, index, kind, lock or None, inputs, timing_core)
            out[f"{index}:{kind}"] = timing.median_ms if timing else None
            if timing is not None:  # the median's 95% interval (``baselines.interval``)
                out[f"{index}:{kind}_lo"], out[f"{index}:{kind}_hi"] = (
                    timing.ci_low_ms,
                    timing.ci_high_ms,
                )
        del inputs
    return out


def stacks_on_request() -> None:
    """``SIGUSR1`` writes every thread's stack to this worker's log (its stderr), for a stall's
    report (``lockholders.dump``) where the worker holds the GPU lock."""
    faulthandler.register(signal.SIGUSR1, all_threads=True)


def main(task_id: str, kinds: str, cases: str, lock: str, core: str = "") -> int:
    stacks_on_request()
    full_fp32()
    gpuwait.asleep()  # waits sleep, except in the timing turns (``gpuwait``)
    print(json.dumps(measure_all(task_id, kinds, cases, lock, core)))
    return 0


def serve() -> int:
    """One request per stdin line, one marked reply line each (``compile_pool``), until stdin
    closes: torch, kbx and inductor start once for many tasks."""
    from kbx.gpu.compile_pool import MARK

    stacks_on_request()
    full_fp32()
    gpuwait.asleep()  # waits sleep, except in the timing turns (``gpuwait``)
    for line in sys.stdin:
        began = process_cpu_s(os.getpid()) or 0.0
        try:
            request = json.loads(line)
            found = measure_all(
                request["task"],
                request["kinds"],
                request["cases"],
                request.get("lock") or "",
                request.get("core") or "",
            )
            reply: dict[str, object] = {"ok": found}
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it
            traceback.print_exc()  # to this worker's log in the run folder (``compile_pool``)
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        if torch.cuda.is_initialized():
            # the task's peak beside its estimate (the stage's log: docs/design/memory.md)
            reply["peak_bytes"] = torch.cuda.max_memory_reserved()
            torch.cuda.empty_cache()  # what this task held goes back to the GPU
            reply["kept_bytes"] = torch.cuda.memory_reserved()
            torch.cuda.reset_peak_memory_stats()
        spent = (process_cpu_s(os.getpid()) or 0.0) - began  # with its waited children's
        reply["cpu_s"] = round(spent, 3)
        sys.stdout.write(MARK.decode() + json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        raise SystemExit(serve())
    raise SystemExit(main(*sys.argv[1:6]))
