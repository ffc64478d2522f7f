"""CPU spent waiting for the GPU: CUDA's default spin-wait against blocking synchronisation.

A benchmark (prints figures, one JSON line per mode): by default CUDA spins a core in every
process that waits for its GPU work (one context per process, fewer contexts than cores), so
that many processes sharing one GPU burn the cores that compilers need.  Modes, each in a fresh
process: ``default``; ``blocking`` (the primary context's flags set to CU_CTX_SCHED_BLOCKING_SYNC
through the driver API before torch initialises CUDA); ``blocking-late`` (set after).  Each
reports wall and CPU seconds of a ~1 s wait, the event-timed median of a small kernel, and with
--procs N the CPU seconds that N processes spent on 10 short waits each, all at once.
    python benchmarks/sync_cpu.py --procs 16
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import subprocess
import sys
import time

BLOCKING_SYNC = 4  # CU_CTX_SCHED_BLOCKING_SYNC


def set_blocking() -> dict[str, int]:
    cuda = ctypes.CDLL("libcuda.so.1")
    out = {"init": cuda.cuInit(0)}
    dev = ctypes.c_int()
    out["get"] = cuda.cuDeviceGet(ctypes.byref(dev), 0)
    fn = getattr(cuda, "cuDevicePrimaryCtxSetFlags_v2", None) or cuda.cuDevicePrimaryCtxSetFlags
    out["set"] = fn(dev, BLOCKING_SYNC)
    flags, active = ctypes.c_uint(), ctypes.c_int()
    out["state"] = cuda.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active))
    out["flags"], out["active"] = flags.value, active.value
    return out


def one(mode: str, waits: int) -> dict[str, object]:
    res: dict[str, object] = {"mode": mode}
    if mode == "blocking":
        res["driver"] = set_blocking()
    import torch

    torch.ones(1, device="cuda")
    if mode == "blocking-late":
        res["driver"] = set_blocking()
    torch.cuda.synchronize()
    if waits:  # many short waits, for the concurrent test
        c0 = time.process_time()
        for _ in range(waits):
            torch.cuda._sleep(100_000_000)  # ~50 ms
            torch.cuda.synchronize()
        res["cpu_s"] = time.process_time() - c0
        return res
    w0, c0 = time.monotonic(), time.process_time()
    torch.cuda._sleep(2_000_000_000)
    torch.cuda.synchronize()
    res["wall_s"], res["cpu_s"] = time.monotonic() - w0, time.process_time() - c0
    x = torch.randn(1 << 22, device="cuda")
    times = []
    for _ in range(200):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        x.mul(2.0)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    res["mul_ms_median"] = statistics.median(times)
    return res


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mode")
    p.add_argument("--waits", type=int, default=0)
    p.add_argument("--procs", type=int, default=0)
    args = p.parse_args()
    if args.mode:
        print(json.dumps(one(args.mode, args.waits)))
        return
    me = [sys.executable, __file__]
    for mode in ("default", "blocking", "blocking-late"):
        print(
            subprocess.run([*me, "--mode", mode], capture_output=True, text=True).stdout.strip()
            or f"{mode}: failed",
            flush=True,
        )
        if args.procs:
            w0 = time.monotonic()
            procs = [
                subprocess.Popen(
                    [*me, "--mode", mode, "--waits", "10"], stdout=subprocess.PIPE, text=True
                )
                for _ in range(args.procs)
            ]
            outs = [json.loads(pr.communicate()[0]) for pr in procs]
            cpu = sum(float(o["cpu_s"]) for o in outs)  # type: ignore[arg-type]
            print(
                json.dumps(
                    {
                        "mode": mode,
                        "procs": args.procs,
                        "wall_s": round(time.monotonic() - w0, 2),
                        "cpu_s_waiting": round(cpu, 2),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
