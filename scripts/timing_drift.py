"""How far one run's case timings are from another's: load-inflated timings show here.

Usage: python scripts/timing_drift.py BASE.jsonl RUN.jsonl [N]
For every benchmark case timed in both record files (same task, same case index), the ratio of
the candidate's median (``kernel_ms``) RUN/BASE; prints the median |log ratio|, the share of
cases more than 10% slower and faster in RUN, and the N (default 10) cases furthest off.  BASE is
typically a quiet run (``docs/validation/reference-h200.jsonl``), RUN one under load (a cold run).
"""

from __future__ import annotations

import json
import math
import statistics
import sys


def cases(path: str) -> dict[tuple[str, int], float]:
    out: dict[tuple[str, int], float] = {}
    with open(path) as f:
        records = [json.loads(line) for line in f if line.strip()]
    for record in records:
        for case in record.get("cases") or []:
            if case.get("kernel_ms"):
                out[(record["task_id"], case["index"])] = float(case["kernel_ms"])
    return out


def main(base_path: str, run_path: str, n: int = 10) -> None:
    base, run = cases(base_path), cases(run_path)
    common = sorted(set(base) & set(run))
    if not common:
        print("no case timed in both")
        return
    logs = {key: math.log(run[key] / base[key]) for key in common}
    slower = sum(v > math.log(1.1) for v in logs.values())
    faster = sum(v < -math.log(1.1) for v in logs.values())
    spread = statistics.median(abs(v) for v in logs.values())
    print(f"{len(common)} cases in both; median |log ratio| {spread:.4f}")
    print(f"more than 10% slower in the run: {slower}; faster: {faster}")
    for key in sorted(logs, key=lambda k: -abs(logs[k]))[:n]:
        ratio = math.exp(logs[key])
        print(f"  {key[0]} case {key[1]}: {base[key]:.4g} -> {run[key]:.4g} ms ({ratio:.2f}x)")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 10)
