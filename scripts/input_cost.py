"""How long each task's inputs take to build, as a candidate's child builds them (one thread).

Usage: python scripts/input_cost.py DEVICE [TASK_GLOB] [--min-s S] [--lock PATH]
Prints one line per task whose cases, benchmark cases and refills together take at least S
seconds (default 0.5), slowest first.  With ``--lock`` (CUDA) each task is also built as a run's
child builds it, every GPU operation under its own shared hold of that lock
(``gpuops.gpu_ops_locked``), and both times are printed: start several copies on one lock file to
see what the holds cost under contention.  The first line gives the CUDA context's cost.
"""

import argparse
import time

import torch

from kbx.gpu.gpuops import gpu_ops_locked
from kbx.gpu.placement import Placement
from kbx.sandbox.child.runner import Plan
from kbx.suite import select


def build_s(task, device: str, lock: str | None) -> float:
    started = time.monotonic()
    Plan.build(
        task,
        Placement(device, lock=lock, timed=True),
        True,
        guard=lambda: gpu_ops_locked(lock, "inputs made"),
    )
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    return time.monotonic() - started


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("device")
    p.add_argument("pattern", nargs="?", default=None)
    p.add_argument("--min-s", type=float, default=0.5)
    p.add_argument("--lock", default=None, help="also build under this GPU lock, op by op")
    args = p.parse_args()
    torch.set_num_threads(1)
    if args.device == "cuda":
        started = time.monotonic()
        torch.cuda.synchronize()  # the context, as the child makes it
        print(f"CUDA context: {time.monotonic() - started:.2f} s")
    costs = []
    for task in select(args.pattern):
        plain = build_s(task, args.device, None)
        locked = build_s(task, args.device, args.lock) if args.lock else 0.0
        costs.append((plain, locked, task.id))
    costs.sort(reverse=True)
    print(f"{len(costs)} tasks, {sum(c[0] for c in costs):.1f} s in all", end="")
    print(f", {sum(c[1] for c in costs):.1f} s under the lock" if args.lock else "")
    for plain, locked, task_id in costs:
        if max(plain, locked) >= args.min_s:
            under = f" {locked:8.2f} s locked" if args.lock else ""
            print(f"{plain:8.2f} s{under}  {task_id}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
