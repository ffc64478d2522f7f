"""Summarize a GPU run of the reference solutions: verdicts, geometric-mean speedup, slowest tasks.

Usage: python scripts/reference_summary.py RESULTS.jsonl [N]
Prints the verdict counts, the geometric mean of the per-task speedups vs eager (and vs
torch.compile where measured), and the N (default 10) tasks with the lowest speedup vs eager,
each with its per-case kernel and eager times and the kernel's achieved bandwidth and FLOP rate
(to set against the GPU's peaks, e.g. the peaks-*.json of the run), which is most of the reason.
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from typing import Any


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def case_line(case: dict[str, Any]) -> str:
    rates = ""
    if case.get("achieved_gbs") is not None:
        rates = f"; {case['achieved_gbs']:.0f} GB/s, {case['achieved_tflops']:.3g} TFLOP/s"
    return (
        f"    {case['label']}: {case['kernel_ms']:.4g} ms vs eager {case['eager_ms']:.4g} ms"
        f" ({case['speedup']:.3g}x{rates})"
    )


def main(path: str, n: str = "10") -> int:
    with open(path) as f:
        records = [json.loads(line) for line in f if line.strip()]
    print(f"{len(records)} records: {dict(Counter(r['verdict'] for r in records))}")
    passed = [r for r in records if r["verdict"] == "passed" and r.get("speedup")]
    compiled = [r["speedup_compile"] for r in passed if r.get("speedup_compile")]
    eager = geomean([r["speedup"] for r in passed])
    print(f"geometric mean vs eager over {len(passed)} passed: {eager:.3f}x")
    if compiled:
        print(f"geometric mean vs torch.compile over {len(compiled)}: {geomean(compiled):.3f}x")
    print(f"the {n} lowest speedups vs eager:")
    for r in sorted(passed, key=lambda r: r["speedup"])[: int(n)]:
        print(f"  {r['task_id']}: {r['speedup']:.3g}x")
        for case in r.get("cases") or []:
            print(case_line(case))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
