"""How many CUDA contexts a host makes and tears down per second, one GPU against several.

Usage: python scripts/context_rate.py [--gpus 0 0,1] [--lanes 16] [--seconds 20]
Every candidate's child makes a CUDA context and loses it when it is killed.  On two H200s many
children waited 1-8 s for their context in the last third of a warm run; on one H200, whose
children started at a higher rate per GPU, 3 of the last 40 did (docs/validation/h200-2026-11-30l/).
If the driver makes contexts one at a time for the whole host, the children of every GPU share
one rate, and a run on two GPUs cannot be much faster than 184 contexts at that rate.  This
measures it.

For each set of GPUs given (``0`` then ``0,1``: one setting per argument), ``lanes`` threads per
GPU each fork a child from this process (torch imported, CUDA not initialised, as in the fork
server), which makes its context (``torch.cuda.synchronize``) on its GPU and reports how long
that took; the lane then kills it and waits for it to end, as the sandbox does, and forks the
next, for ``seconds``.  Prints contexts per second for the host and medians of making a context
and of a kill's wait.  A benchmark for the device machine, not a test; without CUDA it says so.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

import torch


def one_child(gpu: int) -> tuple[float, float]:
    """Seconds to make the context in a forked child on ``gpu``; seconds of the kill's wait."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
        began = time.monotonic()
        torch.cuda.synchronize()
        os.write(write_fd, f"{time.monotonic() - began}\n".encode())
        time.sleep(60)  # killed long before
        os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd) as got:
        made_s = float(got.readline() or "nan")
    killed = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return made_s, time.monotonic() - killed


def measure(gpus: list[int], lanes: int, seconds: float) -> str:
    made: list[float] = []
    waits: list[float] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def lane(gpu: int) -> None:
        while time.monotonic() < stop:
            m, w = one_child(gpu)
            with lock:
                made.append(m)
                waits.append(w)

    began = time.monotonic()
    threads = [threading.Thread(target=lane, args=(g,)) for g in gpus for _ in range(lanes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - began
    return (
        f"gpus {','.join(map(str, gpus))}, {lanes} lanes each: {len(made)} contexts in "
        f"{wall:.1f} s = {len(made) / wall:.2f}/s; making one: median {statistics.median(made):.2f}"
        f" s, p90 {sorted(made)[int(0.9 * len(made))]:.2f} s; the kill's wait: median "
        f"{statistics.median(waits):.2f} s"
    )


def cuda_seen() -> bool:
    """Whether a CUDA device is there, asked of another process: this one must not start CUDA
    before it forks the children."""
    probe = "import torch; print(torch.cuda.is_available())"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    return out.stdout.strip() == "True"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpus", nargs="+", default=["0", "0,1"])
    p.add_argument("--lanes", type=int, default=16)
    p.add_argument("--seconds", type=float, default=20.0)
    args = p.parse_args()
    if not cuda_seen():
        print("no CUDA device: nothing to measure")
        return 0
    for setting in args.gpus:
        print(measure([int(g) for g in setting.split(",")], args.lanes, args.seconds), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
