"""How long each task's inputs take to build, as a candidate's child builds them (one thread).

Usage: python scripts/input_cost.py DEVICE [TASK_GLOB] [--min-s S]
Prints one line per task whose cases, benchmark cases and refills together take at least S
seconds (default 0.5), slowest first.  Inputs are built under the shared GPU lock in a run, so a
slow task holds up every timing on its GPU (docs/design/timing.md, Throughput).
"""

import argparse
import time

import torch

from kbx.evaluate.runner import Plan
from kbx.suite import select


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("device")
    p.add_argument("pattern", nargs="?", default=None)
    p.add_argument("--min-s", type=float, default=0.5)
    args = p.parse_args()
    torch.set_num_threads(1)
    if args.device == "cuda":
        torch.zeros(1, device="cuda")  # the context, not counted
    costs = []
    for task in select(args.pattern):
        started = time.monotonic()
        Plan.build(task, args.device, True, timed=True)  # benchmark cases too, even on the CPU
        if args.device == "cuda":
            torch.cuda.synchronize()
        costs.append((time.monotonic() - started, task.id))
        if args.device == "cuda":
            torch.cuda.empty_cache()
    costs.sort(reverse=True)
    print(f"{len(costs)} tasks, {sum(c for c, _ in costs):.1f} s in all")
    for cost, task_id in costs:
        if cost >= args.min_s:
            print(f"{cost:8.2f} s  {task_id}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
