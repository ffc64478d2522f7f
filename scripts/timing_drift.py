"""How far one run's case timings are from another's: load-inflated timings show here.

Usage: python scripts/timing_drift.py BASE.jsonl RUN.jsonl|RUN.sqlite [N]
For every benchmark case timed in both record files (same task, same case index), the ratio of
the candidate's median (``kernel_ms``) RUN/BASE; with a baseline cache (``baselines.sqlite``) as
RUN, of its eager and torch.compile medians to BASE's ``eager_ms`` and ``compile_ms``.  Prints
the median |log ratio|, the share of cases more than 10% slower and faster in RUN, and the N
(default 10) cases furthest off.  BASE is
typically a quiet run (``benchmarks/results/reference-h200.jsonl``), RUN one under load (a cold
run).
"""

from __future__ import annotations

import json
import math
import sqlite3
import statistics
import sys

Key = tuple[str, int, str]  # task, case index, what was timed (kernel, eager, compile)


def cases(path: str, kinds: tuple[str, ...] = ("kernel",)) -> dict[Key, float]:
    out: dict[Key, float] = {}
    with open(path) as f:
        records = [json.loads(line) for line in f if line.strip()]
    for record in records:
        for case in record.get("cases") or []:
            for kind in kinds:
                if case.get(f"{kind}_ms"):
                    out[(record["task_id"], case["index"], kind)] = float(case[f"{kind}_ms"])
    return out


def cached(path: str) -> dict[Key, float]:
    """The baselines of a cache (``baselines.BaselineCache``), whatever machine keys they carry."""
    out: dict[Key, float] = {}
    for key, ms in sqlite3.connect(path).execute("SELECT key, ms FROM baselines"):
        k = json.loads(key)
        if ms:
            out[(k["task"], int(k["case"]), k["kind"])] = float(ms)
    return out


def main(base_path: str, run_path: str, n: int = 10) -> None:
    if run_path.endswith(".sqlite"):
        base, run = cases(base_path, ("eager", "compile")), cached(run_path)
    else:
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
        what = f"case {key[1]}" + ("" if key[2] == "kernel" else f" {key[2]}")
        print(f"  {key[0]} {what}: {base[key]:.4g} -> {run[key]:.4g} ms ({ratio:.2f}x)")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 10)
