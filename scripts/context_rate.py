"""How many CUDA contexts a host makes and tears down per second, one GPU against several.

Usage: python scripts/context_rate.py [--gpus 0 0,1] [--lanes 16] [--seconds 20]
       [--burst N] [--alloc-mb MB] [--raw] [--env NAME=VALUE ...]
Every candidate's child makes a CUDA context and loses it when it is killed.  On two H200s many
children waited 1-8 s for their context in the last third of a warm run; on one H200, whose
children started at a higher rate per GPU, 3 of the last 40 did (the run recorded in commit
f8e6ede).
If the driver makes contexts one at a time for the whole host, the children of every GPU share
one rate, and a run on two GPUs cannot be much faster than 184 contexts at that rate.  This
measures it.

For each set of GPUs given (``0`` then ``0,1``: one setting per argument), ``lanes`` threads per
GPU each fork a child from this process (torch imported, CUDA not initialised, as in the fork
server), which makes its context on its GPU and reports how long the driver's start
(``torch.cuda.init``) and the context (``torch.cuda.synchronize``) took; the lane then kills it
and waits for it to end, as the sandbox does, and forks the next, for ``seconds``.  Prints
contexts per second for the host and medians of each part and of a kill's wait.

``--burst N`` instead forks N children per GPU at once, waits until all have made their context,
then kills them all at once: how long the host takes to make N contexts side by side, and to tear
them down, apart.  ``--alloc-mb`` has each child also allocate and fill that much GPU memory
(which its teardown then frees), ``--raw`` makes the context through the driver API alone
(``cuInit``, ``cuDevicePrimaryCtxRetain``), without torch, and ``--env`` sets variables in the
child before its context.  A benchmark for the device machine, not a test; without CUDA it says
so.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

import torch


@dataclass
class Setting:
    """What each child does besides making its context."""

    alloc_mb: int = 0
    raw: bool = False
    env: dict[str, str] = field(default_factory=dict)


def make_context(setting: Setting) -> tuple[float, float]:
    """In the child: seconds of the driver's start and of the context (plus its allocations)."""
    began = time.monotonic()
    if setting.raw:
        cuda = ctypes.CDLL("libcuda.so.1")
        assert cuda.cuInit(0) == 0
        started = time.monotonic()
        ctx = ctypes.c_void_p()
        assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
        assert cuda.cuCtxSetCurrent(ctx) == 0
        assert cuda.cuCtxSynchronize() == 0
    else:
        torch.cuda.init()
        started = time.monotonic()
        torch.cuda.synchronize()
        if setting.alloc_mb:
            chunks = [torch.ones(64 << 18, device="cuda") for _ in range(setting.alloc_mb // 64)]
            torch.cuda.synchronize()
            del chunks  # stays in torch's cache, as a job's memory does until it is killed
    return started - began, time.monotonic() - started


def fork_child(gpu: int, setting: Setting) -> tuple[int, int]:
    """A child making its context on ``gpu``; its pid and the pipe it reports on."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
        os.environ.update(setting.env)
        init_s, ctx_s = make_context(setting)
        os.write(write_fd, f"{init_s} {ctx_s}\n".encode())
        time.sleep(120)  # killed long before
        os._exit(0)
    os.close(write_fd)
    return pid, read_fd


def report(read_fd: int) -> tuple[float, float]:
    with os.fdopen(read_fd) as got:
        parts = (got.readline() or "nan nan").split()
    return float(parts[0]), float(parts[1])


def kill(pid: int) -> float:
    killed = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return time.monotonic() - killed


def med(values: list[float]) -> str:
    return f"{statistics.median(values):.3f}"


def measure(gpus: list[int], lanes: int, seconds: float, setting: Setting) -> str:
    inits: list[float] = []
    made: list[float] = []
    waits: list[float] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def lane(gpu: int) -> None:
        while time.monotonic() < stop:
            pid, fd = fork_child(gpu, setting)
            init_s, ctx_s = report(fd)
            wait_s = kill(pid)
            with lock:
                inits.append(init_s)
                made.append(ctx_s)
                waits.append(wait_s)

    began = time.monotonic()
    threads = [threading.Thread(target=lane, args=(g,)) for g in gpus for _ in range(lanes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - began
    return (
        f"cycles: gpus {','.join(map(str, gpus))}, {lanes} lanes each, {describe(setting)}: "
        f"{len(made)} contexts in {wall:.1f} s = {len(made) / wall:.2f}/s; medians: driver start "
        f"{med(inits)} s, context {med(made)} s (p90 {sorted(made)[int(0.9 * len(made))]:.3f}), "
        f"kill's wait {med(waits)} s"
    )


def burst(gpus: list[int], count: int, setting: Setting) -> str:
    """``count`` children per GPU make their contexts at once; then all are killed at once."""
    began = time.monotonic()
    children = [fork_child(g, setting) for g in gpus for _ in range(count)]
    parts = [report(fd) for _, fd in children]
    made_s = time.monotonic() - began
    killed = time.monotonic()
    for pid, _ in children:
        os.kill(pid, signal.SIGKILL)
    for pid, _ in children:
        os.waitpid(pid, 0)
    gone_s = time.monotonic() - killed
    total = len(children)
    return (
        f"burst: gpus {','.join(map(str, gpus))}, {count} each, {describe(setting)}: {total} made "
        f"in {made_s:.2f} s ({total / made_s:.2f}/s; each: driver start median "
        f"{med([p[0] for p in parts])} s, context median {med([p[1] for p in parts])} s, max "
        f"{max(p[0] + p[1] for p in parts):.3f} s); all gone {gone_s:.2f} s after the kill "
        f"({total / gone_s:.2f}/s)"
    )


def describe(setting: Setting) -> str:
    bits = ["driver API" if setting.raw else "torch"]
    if setting.alloc_mb:
        bits.append(f"{setting.alloc_mb} MB each")
    bits += [f"{k}={v}" for k, v in setting.env.items()]
    return ", ".join(bits)


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
    p.add_argument("--burst", type=int, default=0, help="children per GPU made at once")
    p.add_argument("--alloc-mb", type=int, default=0)
    p.add_argument("--raw", action="store_true", help="the driver API alone, no torch")
    p.add_argument("--env", nargs="*", default=[], help="NAME=VALUE set in each child")
    args = p.parse_args()
    if not cuda_seen():
        print("no CUDA device: nothing to measure")
        return 0
    setting = Setting(args.alloc_mb, args.raw, dict(e.split("=", 1) for e in args.env))
    for gpus in ([int(g) for g in s.split(",")] for s in args.gpus):
        line = (
            burst(gpus, args.burst, setting)
            if args.burst
            else measure(gpus, args.lanes, args.seconds, setting)
        )
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
