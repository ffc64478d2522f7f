"""What the compile stage (``kbx.sandbox.precompile``) leaves for the reference solutions, on
any machine (it needs no GPU): for each task, the stage's wall seconds, the kernels it compiled
(Triton cache groups) and their bytes, for CUDA capability ``--arch``; then the share of tasks it
left at least one kernel for, and the median and p90 of its seconds.

    PYTHONPATH=src python benchmarks/compile_ahead.py --tasks 'Activation/*,Fusion/*' --arch 90
"""

from __future__ import annotations

import argparse
import fnmatch
import statistics
import tempfile
import time
from pathlib import Path

from kbx.sandbox import kernels
from kbx.sandbox.precompile import compile_ahead
from kbx.sandbox.servers import ForkServers
from kbx.sandbox.wire.job import ChildConfig
from kbx.suite import load_suite

ROOT = Path(__file__).resolve().parent.parent


def groups(entry: Path | None) -> int:
    """Kernels in a store entry: Triton's cache groups (``__grp__*.json``)."""
    return len(list(entry.rglob("__grp__*.json"))) if entry is not None and entry.is_dir() else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", default="*", help="comma-separated glob patterns of task ids")
    p.add_argument("--arch", type=int, default=90, help="CUDA capability (90: sm_90)")
    p.add_argument("--limit-s", type=float, default=120.0, help="a stage's wall time limit")
    args = p.parse_args()
    patterns = args.tasks.split(",")
    tasks = [
        t for i, t in sorted(load_suite().items()) if any(fnmatch.fnmatch(i, x) for x in patterns)
    ]
    servers = ForkServers(0)
    spent, with_kernels = [], 0
    began = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="kbx-ahead-") as tmp:
            cfg = ChildConfig(device="cuda", triton_cache=Path(tmp) / "store")
            for task in tasks:
                code = (ROOT / "solutions" / "reference" / f"{task.id}.py").read_text()
                figures = compile_ahead(task, code, cfg, args.arch, servers, args.limit_s)
                found = groups(kernels.entry(cfg.triton_cache, task.id, code))
                with_kernels += found > 0
                spent.append(figures.get("ahead", 0.0))
                print(
                    f"{task.id:45} {figures.get('ahead', 0):6.1f} s  {found:3d} kernels  "
                    f"{figures.get('ahead_bytes', 0) / 1e6:6.2f} MB",
                    flush=True,
                )
    finally:
        servers.close()
    q = statistics.quantiles(spent, n=10) if len(spent) > 1 else spent * 9
    print(
        f"{with_kernels}/{len(tasks)} tasks with kernels compiled ahead; stage median "
        f"{statistics.median(spent):.1f} s, p90 {q[-1]:.1f} s; {time.monotonic() - began:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
