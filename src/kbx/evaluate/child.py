"""The candidate's child process: build inputs, import the candidate, run its cases, report.

Run as ``python -m kbx.evaluate.child JOB.json`` by ``sandbox.py`` in a scrubbed environment and a
working directory of its own.  Inputs are built from the task's seeds *before* the candidate is
imported, so nothing its import does can change them.  Progress goes to the parent as JSON lines on
a pipe; outputs go to ``outputs.pt`` and are judged by the parent, never here.

Threat model: this process runs untrusted code, so everything it reports (messages, outputs,
launch counts, timings) is a claim.  Outputs are compared by the parent; a forged rejection only
hurts the candidate itself.  A candidate that patches kbx's own hooks in this process can still
fool the launch counter and the timer; hardening them is tracked in docs/design/trust-model.md.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

CANDIDATE_FILE = "candidate.py"


class Channel:
    def __init__(self, fd: int) -> None:
        self.stream = os.fdopen(fd, "w", buffering=1)

    def send(self, event: str, **fields: Any) -> None:
        self.stream.write(json.dumps({"event": event, **fields}) + "\n")
        self.stream.flush()


def make_context(device: str) -> None:
    """The CUDA context, unlocked: a second of driver work and no kernel (creating it runs
    nothing on the GPU); from then on the process waits for the GPU asleep, except in a timing
    turn (``gpuwait``)."""
    if device == "cuda":
        from kbx.evaluate import gpuops, gpuwait

        gpuops.make_context(None)
        gpuwait.asleep()


def main(job_path: str, msg_fd: int | None = None) -> int:
    """Run the job; ``msg_fd`` is the progress pipe when it is not the job file's (a child
    forked by ``forkserver.py`` receives it under another number)."""
    began = time.monotonic()
    job = json.loads(Path(job_path).read_text())
    Path(job_path).unlink()  # the candidate need not learn the channel's number from it
    channel = Channel(job["msg_fd"] if msg_fd is None else msg_fd)
    if job["device"] == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # must precede the first import of triton
    import torch

    from kbx.evaluate import benchtime, cores, gpulock, gpuops, launches, runner
    from kbx.suite import find

    runner.full_fp32()
    task = find(job["task_id"])
    if task is None:
        channel.send("harness_error", detail=f"task {job['task_id']} not found in the child")
        return 0
    gpulock.ON_WAIT.append(lambda waiting: channel.send("wait" if waiting else "go"))
    cores.register(job.get("lock"), job.get("timing_core"))
    # where the setup goes, measured by kbx's own code before the candidate is imported
    clock = {"last": began}

    def lap() -> float:
        now = time.monotonic()
        spent, clock["last"] = now - clock["last"], now
        return round(spent, 3)

    parts = {"imports": lap()}
    make_context(job["device"])  # made already in a spare of the fork server
    parts["context"] = lap()
    benchtime.PROFILE["on"] = bool(job.get("profile"))
    if benchtime.PROFILE["on"] and job["perf"]:  # its imports outside any GPU turn
        benchtime.prepare_profiler()
        parts["profiler"] = lap()
    queued = gpulock.waited_s()

    def guard() -> AbstractContextManager[Any]:
        return gpuops.gpu_ops_locked(job.get("lock"), "inputs made")

    plan = runner.Plan.build(task, job["device"], job["device"] == "cuda", job["perf"], guard)
    parts["inputs"] = round(lap() - (gpulock.waited_s() - queued), 3)  # less lock waits
    counter = launches.install_launch_counter(job["device"] == "cpu", job.get("lock"))
    parts["hooks"] = lap()
    channel.send("ready", parts=parts)
    try:
        entry = runner.import_entry(task, Path(CANDIDATE_FILE).resolve())
        channel.send("imported")
        counter.required = job["require_triton"]
        results = runner.run_cases(task, plan, entry, counter, channel, job.get("lock"))
        timings: list[dict[str, Any]] = []
        if job["perf"]:
            timings, results["timed"], results["timed_variant"] = benchtime.time_bench(
                task, plan, entry, channel, job.get("lock")
            )
    except runner.CandidateFailure as failure:
        channel.send("reject", verdict=failure.verdict, detail=failure.detail)
        return 0
    channel.send("saving")
    if hasattr(torch.serialization, "set_crc32_options"):
        torch.serialization.set_crc32_options(False)  # 4x faster; the file never leaves the host
    torch.save(results, "outputs.pt")
    channel.send("done", timings=timings)
    return 0


def run_job(job_path: str, msg_fd: int | None = None) -> int:
    """``main`` with kbx's own faults (before or after the candidate ran) as exit code 70."""
    try:
        return main(job_path, msg_fd)
    except Exception:  # noqa: BLE001 - reported on stderr, turned into a verdict by the parent
        sys.stderr.write(traceback.format_exc())
        return 70


if __name__ == "__main__":
    sys.exit(run_job(sys.argv[1]))
