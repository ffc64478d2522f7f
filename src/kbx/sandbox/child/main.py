"""The candidate's child process: build inputs, import the candidate, run its cases, report.

Run as ``python -m kbx.sandbox.child.main JOB.json`` by ``sandbox.py`` (or forked by the fork
server) inside the sandbox (``confine``), in a scrubbed environment and a folder of its own.
Inputs are built from the task's seeds *before* the candidate is imported, so nothing its import
does can change them.  Progress goes to the parent as signed JSON lines on a pipe (``channel``);
each case's outputs go to a safetensors file of its own (``outputs``), announced with its hash,
and are judged by the parent, never here.

Threat model: this process runs untrusted code, so everything it reports (messages, outputs, op
evidence, timings) is a claim.  The guard (``guard``) and the bindings made before the import
raise the cost of forging it; docs/design/trust-model.md says what remains open.
"""

from __future__ import annotations

import itertools
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbx.sandbox.wire.job import Job


class Channel:
    """The progress pipe; every line is built against the parent's schema (``channel``) and,
    with a ``key``, signed (``channel.sign``): the key lives only in this closure, which
    candidate code cannot reach (``guard``), so it cannot forge a line the parent accepts.
    Without one (the GPU lock's wait/go, which only move a deadline) lines go unsigned."""

    def __init__(self, fd: int, key: str | None = None) -> None:
        from kbx.sandbox.wire import channel

        def send(event: str, **fields: Any) -> None:
            data = channel.encode(event, **fields)
            if key is not None:
                data = channel.sign(data, key, next(count))
            while data:
                data = data[os.write(fd, data) :]

        count = itertools.count()
        self.send = send


def make_context(device: str) -> None:
    """The CUDA context, unlocked: a second of driver work and no kernel (creating it runs
    nothing on the GPU); from then on the process waits for the GPU asleep, except in a timing
    turn (``gpuwait``)."""
    if device == "cuda":
        from kbx.gpu import clock, gpuops, gpuwait

        gpuops.make_context(None)
        gpuwait.asleep()
        clock.cuda_ops()  # bound before the candidate can patch torch.cuda


def main(job_path: str, msg_fd: int | None = None, isolated: Sequence[str] | None = None) -> int:
    """Run the job; ``msg_fd`` is the progress pipe when it is not the job file's (a child
    forked by ``forkserver.py`` receives it under another number); ``isolated``: the namespace
    layers ``confine.isolate`` gave this process (None: its caller did not keep them, and
    ``isolate``, called again, returns them)."""
    began = time.monotonic()
    job, channel, unsigned = open_job(job_path, msg_fd, isolated)
    confined = time.monotonic()
    if job.config.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # must precede the first import of triton
    from kbx.gpu import gpulock
    from kbx.sandbox.child import entry
    from kbx.suite import find, tensors

    tensors.full_fp32()
    task = find(job.task_id)
    if task is None:
        channel.send("harness_error", detail=f"task {job.task_id} not found in the child")
        return 0
    gpulock.ON_WAIT.append(lambda waiting: unsigned.send("wait" if waiting else "go"))
    parts, plan, counter = set_up(task, job, confined)
    parts["confine"] = round(confined - began, 3)
    channel.send("ready", parts=parts)
    spent: dict[str, float] = {}
    try:
        timings = run_candidate(task, job, plan, counter, channel, spent)
    except entry.CandidateFailure as failure:
        channel.send("reject", verdict=failure.verdict, detail=failure.detail)
        return 0
    if job.config.device == "cuda":  # the CPU interpreter compiles nothing
        spent["compile"] = counter.compile_s
    channel.send("done", timings=timings, parts={k: round(v, 3) for k, v in spent.items()})
    return 0


def open_job(
    job_path: str, msg_fd: int | None, isolated: Sequence[str] | None
) -> tuple[Job, Channel, Channel]:
    """The job, read against its schema (its file removed: the candidate need not learn the
    channel's number from it), this process confined before anything of the candidate's is
    read, and the progress channel: signed, and unsigned for the GPU lock's wait/go. The key
    lives on in the signed channel's closure only."""
    from kbx.sandbox.child import confine
    from kbx.sandbox.wire.job import Job

    job = Job.read(Path(job_path))
    Path(job_path).unlink()
    layers = confine.isolate() if isolated is None else isolated
    confine.restrict(job.confine, layers)
    fd = job.msg_fd if msg_fd is None else msg_fd
    signed = Channel(fd, job.key or None)
    return job.model_copy(update={"key": ""}), signed, Channel(fd)


def set_up(task: Any, job: Job, began: float) -> tuple[dict[str, float], Any, Any]:
    """kbx's own set-up before the candidate is imported: the CUDA context, the profilers'
    first sessions, every input, the launch hooks; the seconds each part took."""
    from kbx.gpu import benchtime, gpulock, gpuops
    from kbx.sandbox.child import launches, runner

    clock = {"last": began}

    def lap() -> float:
        now = time.monotonic()
        spent, clock["last"] = now - clock["last"], now
        return round(spent, 3)

    parts = {"imports": lap()}
    cfg = job.config
    make_context(cfg.device)  # made already in a spare of the fork server
    parts["context"] = lap()
    benchtime.prepare_profiler()  # its imports (a second or more) before the candidate's stages
    parts["profiler"] = lap()
    queued = gpulock.waited_s()

    def guard() -> AbstractContextManager[Any]:
        return gpuops.gpu_ops_locked(cfg.lock, "inputs made")

    plan = runner.Plan.build(task, cfg.place, job.bench, guard)
    parts["inputs"] = round(lap() - (gpulock.waited_s() - queued), 3)  # less lock waits
    counter = launches.install_launch_counter(cfg.device == "cpu", cfg.lock)
    parts["hooks"] = lap()
    return parts, plan, counter


def run_candidate(
    task: Any, job: Job, plan: Any, counter: Any, channel: Channel, spent: dict[str, float]
) -> list[dict[str, Any]]:
    """Import the candidate and run its cases, each under a profiler session of its own that
    records its torch operations (the first includes the import), then time its benchmark
    cases; every output is written as it is made (``write_output``).  The guard goes in first,
    and everything kbx's evidence needs is bound here, before candidate code runs: patching
    ``OpRecorder`` or ``opcheck`` afterwards changes none of it.  ``spent`` gets the wall
    seconds of the op evidence's sessions (``evidence``)."""
    from kbx.gpu import clock
    from kbx.sandbox.child import entry, guard, opcheck, runner
    from kbx.suite.verdict import Verdict

    start, stop, after = (timed(f, spent) for f in op_sessions(job, plan, counter, channel))

    def sink(kind: str, index: int, runs: list[Any], variant: int | None = None) -> None:
        write_output(channel, kind, index, runs, variant)

    guard.install()
    start()
    try:
        fn = entry.import_entry(task, Path(entry.CANDIDATE_PATH).resolve())
        channel.send("imported")
        counter.required = job.config.require_triton
        runner.run_cases(task, plan, fn, counter, channel, sink, after)
        stop()
    except opcheck.Tampered as exc:
        raise entry.CandidateFailure(Verdict.FORBIDDEN, str(exc)) from None
    finally:
        counter.mark = None
    timings: list[dict[str, Any]] = []
    if (cfg := job.config).timed:
        precision = clock.Precision(cfg.timing_rel_ci, cfg.timing_budget_ms)
        timings, outs, variants = runner.time_bench(task, plan, fn, channel, cfg.profile, precision)
        for i, (runs, variant) in enumerate(zip(outs, variants, strict=True)):
            sink("timed", i, runs, variant)
    return timings


def op_sessions(
    job: Job, plan: Any, counter: Any, channel: Channel
) -> tuple[Callable[[], None], Callable[[], dict[str, int]], Callable[[str, int], None]]:
    """The op recorder's sessions (``opcheck``), its harness range on the plan and its launch
    range on the counter: ``start``, ``stop``, and ``after``, which ends a case's session,
    reports its operations and starts the next one's.  No-ops where Triton is not required: the
    profiler's CUDA trace of a torch reference's thousands of kernels costs CPU time of its own."""
    from kbx.sandbox.child import opcheck

    if not job.config.require_triton:  # kbx's own reference (``kbx validate``): no evidence needed
        return (lambda: None), (lambda: {}), (lambda kind, index: None)
    recorder = opcheck.OpRecorder(gpu=job.config.device == "cuda")
    recorder.kernels = counter.kernels
    start, stop = recorder.start, recorder.stop
    plan.harness = recorder.harness
    intact = recorder.watch_python_reads(lambda: counter.depth == 0)

    def after(kind: str, index: int) -> None:
        calls = stop()
        if not intact():
            raise opcheck.Tampered("kbx's hooks on torch.Tensor were replaced")
        channel.send("ops", kind=kind, index=index, calls=top_ops(calls))
        start()

    counter.mark, counter.own = recorder.launch, recorder.candidate
    return start, stop, after


def timed(fn: Callable[..., Any], spent: dict[str, float]) -> Callable[..., Any]:
    """``fn`` with its wall time added to ``spent["evidence"]``."""

    def call(*args: Any) -> Any:
        began = time.monotonic()
        try:
            return fn(*args)
        finally:
            spent["evidence"] = spent.get("evidence", 0.0) + time.monotonic() - began

    return call


def top_ops(calls: dict[str, int], limit: int = 200) -> dict[str, int]:
    """The most frequent of ``calls``, within the channel's limit on names."""
    ranked = sorted(calls.items(), key=lambda kv: -kv[1])[:limit]
    return {name[:100]: count for name, count in ranked}


def write_output(
    channel: Channel, kind: str, index: int, runs: list[Any], variant: int | None = None
) -> None:
    """One case's outputs to its own file, announced with the hash of its bytes: a file the
    candidate rewrites afterwards no longer matches."""
    from kbx.sandbox.wire import outputs

    name = outputs.file_name(kind, index)
    digest = outputs.save_case(Path(name), runs)
    extra = {} if variant is None else {"variant": variant}
    channel.send("output", kind=kind, index=index, file=name, sha256=digest, **extra)


def run_job(job_path: str, msg_fd: int | None = None, isolated: Sequence[str] | None = None) -> int:
    """``main`` with kbx's own faults (before or after the candidate ran) as exit code 70."""
    try:
        return main(job_path, msg_fd, isolated)
    except Exception:  # noqa: BLE001 - reported on stderr, turned into a verdict by the parent
        sys.stderr.write(traceback.format_exc())
        return 70


if __name__ == "__main__":
    from kbx.sandbox.child import confine

    layers = confine.isolate()  # returns in the worker only; this process ends as the worker
    sys.exit(run_job(sys.argv[1], isolated=layers))
