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


def sender(fd: int, key: str | None = None) -> Callable[..., None]:
    """The progress pipe's sender: every line JSON, and with a ``key`` signed (HMAC-SHA256 of its
    number in the stream and its bytes, as ``channel.sign``).  It runs only functions bound here
    (the C JSON encoder, OpenSSL's HMAC, ``os.write``), and the key lives only in its closure,
    which candidate code cannot reach (``guard``): a candidate that rebinds ``json``, ``hmac`` or
    kbx's ``channel`` changes no line, and cannot forge one the parent accepts.  Without a key
    (the GPU lock's wait/go, which only move a deadline) lines go unsigned."""
    import _hashlib
    import _json

    from kbx.sandbox.wire import channel

    def refuse(obj: Any, _error: type[Exception] = TypeError, _type: Any = type) -> Any:
        raise _error(f"cannot encode {_type(obj).__name__}")

    encode = _json.make_encoder(
        None, refuse, _json.encode_basestring, None, ":", ",", False, False, False
    )
    join, utf8, hexed, write, nxt, size = "".join, str.encode, bytes.hex, os.write, next, len
    digest, cap, error = _hashlib.hmac_digest, channel.MAX_LINE_BYTES, channel.ChannelError
    raw = key.encode() if key else None
    count = itertools.count()

    def send(event: str, **fields: Any) -> None:
        data = utf8(join(encode({"event": event, **fields}, 0)), "utf-8", "replace")
        if size(data) > cap:
            raise error(f"message of {size(data)} bytes, over {cap}")
        if raw is not None:
            mac = hexed(digest(raw, utf8(f"{nxt(count)}:", "ascii") + data, "sha256"))
            data = data + b"\t" + utf8(mac, "ascii")
        data = data + b"\n"
        while data:
            data = data[write(fd, data) :]

    return send


def make_context(device: str) -> None:
    """The CUDA context, unlocked: a second of driver work and no kernel (creating it runs
    nothing on the GPU); from then on the process waits for the GPU asleep, except in a timing
    turn (``gpuwait``)."""
    if device == "cuda":
        from kbx.gpu import clock, gpuops, gpuwait

        gpuops.make_context(None)
        gpuwait.asleep()
        clock.cuda_ops()  # bound before the candidate can patch torch.cuda
        triton_driver()


def triton_driver() -> None:
    """Triton's CUDA driver made now: its first use binds module globals of Triton's
    (``PyCUtensorMap``, ``PyKernelArg``...), which made during the candidate's first launch
    the case-end check (``pristine``) would read as the candidate's patch."""
    from triton.runtime.driver import driver

    driver.active.utils  # noqa: B018 - made on first use


def main(job_path: str, msg_fd: int | None = None, isolated: Sequence[str] | None = None) -> int:
    """Run the job; ``msg_fd`` is the progress pipe when it is not the job file's (a child
    forked by ``forkserver.py`` receives it under another number); ``isolated``: the namespace
    layers ``confine.isolate`` gave this process (None: its caller did not keep them, and
    ``isolate``, called again, returns them)."""
    began = time.monotonic()
    job, send, unsigned = open_job(job_path, msg_fd, isolated)
    confined = time.monotonic()
    if job.config.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # must precede the first import of triton
    from kbx.gpu import gpulock
    from kbx.sandbox.child import bound, entry
    from kbx.suite import find, tensors

    tensors.full_fp32()
    task = find(job.task_id)
    if task is None:
        send("harness_error", detail=f"task {job.task_id} not found in the child")
        return 0
    if job.config.compile_for is not None:  # a compile stage: no GPU, no verdict
        from kbx.sandbox.child import precompile

        precompile.run(task, job.bench, job.config.compile_for)
        return 0
    gpulock.ON_WAIT.append(lambda waiting: unsigned("wait" if waiting else "go"))
    parts, plan = set_up(task, job, confined)
    parts["confine"] = round(confined - began, 3)
    # kbx's modules frozen (``bound``): from here on kbx runs the copies, before the import
    stages = bound.freeze().modules["kbx.sandbox.child.stages"]
    ctx = stages.prepare(task, job, plan, send)
    parts["hooks"] = round(time.monotonic() - began - sum(parts.values()), 3)
    send("ready", parts=parts)
    stages.candidate(ctx, task, job, plan, Path(entry.CANDIDATE_PATH).resolve())
    return 0


def open_job(
    job_path: str, msg_fd: int | None, isolated: Sequence[str] | None
) -> tuple[Job, Callable[..., None], Callable[..., None]]:
    """The job, read against its schema (its file removed: the candidate need not learn the
    channel's number from it), this process confined before anything of the candidate's is
    read, and the progress channel: signed, and unsigned for the GPU lock's wait/go. The key
    lives on in the signed sender's closure only."""
    from kbx.sandbox.child import confine
    from kbx.sandbox.wire.job import Job

    job = Job.read(Path(job_path))
    Path(job_path).unlink()
    layers = confine.isolate() if isolated is None else isolated
    confine.restrict(job.confine, layers)
    fd = job.msg_fd if msg_fd is None else msg_fd
    signed = sender(fd, job.key or None)
    return job.model_copy(update={"key": ""}), signed, sender(fd)


def set_up(task: Any, job: Job, began: float) -> tuple[dict[str, float], Any]:
    """kbx's own set-up before the candidate is imported: the CUDA context, the profilers'
    first imports, every input; the seconds each part took."""
    from kbx.gpu import benchtime, gpulock, gpuops
    from kbx.sandbox.child import runner, stages  # noqa: F401 - imported before the freeze

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
    return parts, plan


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
