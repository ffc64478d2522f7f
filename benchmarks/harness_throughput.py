"""Harness throughput on the GPU: evaluate solutions/reference twice (cold, then warm baselines).

A benchmark, not a test: it prints figures and writes them to a JSON file.
    PYTHONPATH=src python benchmarks/harness_throughput.py --gpus 0 --profile \
        --out docs/validation/throughput-h200.json
Cold run: a fresh baseline cache (every eager and torch.compile baseline measured).  Warm run:
the same cache.  Repeatability: median over tasks of |log(speedup run 1 / speedup run 2)|.  With
--profile, a third run times every case with the torch profiler too and reports the fraction of
cases over 50 us whose event timing is within 10% of the profiler's kernel time.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from kbx.evaluate.pipeline import EvalConfig
from kbx.hardware import fingerprint
from kbx.runs import run_eval

ROOT = Path(__file__).resolve().parent.parent


def one_run(out: Path, cache: Path, args: argparse.Namespace, profile: bool = False) -> dict:
    cfg = EvalConfig(
        device="cuda", run_dir=out, baseline_cache=cache / "baselines.sqlite", profile=profile
    )
    gpus = [int(g) for g in args.gpus.split(",")]
    started = time.monotonic()
    summary = run_eval(
        ROOT / "solutions" / "reference", out, cfg, args.jobs * len(gpus), args.tasks, gpus=gpus
    )
    wall = time.monotonic() - started
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    stages: dict[str, float] = defaultdict(float)
    for r in records:
        for k, v in (r.get("stage_s") or {}).items():
            stages[k] += v
    print(f"{out.name}: {wall:.1f} s wall, {summary['counts']}", flush=True)
    return {"wall_s": wall, "records": records, "stage_s": dict(stages)}


def repeatability(a: list[dict], b: list[dict]) -> float | None:
    first = {r["task_id"]: r["speedup"] for r in a if r.get("speedup")}
    ratios = [
        abs(math.log(first[r["task_id"]] / r["speedup"]))
        for r in b
        if r.get("speedup") and r["task_id"] in first
    ]
    return statistics.median(ratios) if ratios else None


def profiler_agreement(records: list[dict]) -> float | None:
    cases = [
        c
        for r in records
        for c in r.get("cases", [])
        if c.get("profiler_ms") and c["kernel_ms"] > 0.05
    ]
    if not cases:
        return None
    close = [c for c in cases if abs(c["kernel_ms"] - c["profiler_ms"]) <= 0.1 * c["profiler_ms"]]
    return len(close) / len(cases)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpus", default="0")
    p.add_argument("--jobs", type=int, default=4, help="jobs per GPU")
    p.add_argument("--tasks", default=None, help="task globs (default: the whole suite)")
    p.add_argument("--profile", action="store_true", help="also run the profiler cross-check")
    p.add_argument("--out", type=Path, required=True, help="JSON file for the figures")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbx-throughput-") as tmp:
        base = Path(tmp)
        cold = one_run(base / "cold", base / "cache", args)
        warm = one_run(base / "warm", base / "cache", args)
        prof = (
            one_run(base / "profile", base / "cache", args, profile=True) if args.profile else None
        )
    fp = fingerprint("cuda")
    figures: dict[str, Any] = {
        "gpu": fp["gpu"],
        "gpus": args.gpus,
        "driver": fp["driver"],
        "torch": fp["torch"],
        "triton": fp["triton"],
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(
            [
                "python",
                "benchmarks/harness_throughput.py",
                f"--gpus {args.gpus}",
                f"--jobs {args.jobs}",
            ]
            + (["--profile"] if args.profile else [])
        ),
        "cold_s": round(cold["wall_s"], 1),
        "warm_s": round(warm["wall_s"], 1),
        "repeatability": repeatability(cold["records"], warm["records"]),
        "profiler_agreement": profiler_agreement(prof["records"]) if prof else None,
        "stages_cold_s": cold["stage_s"],
        "stages_warm_s": warm["stage_s"],
        "passed_warm": sum(r["verdict"] == "passed" for r in warm["records"]),
        "candidates": len(warm["records"]),
        "git": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        or None,
    }
    args.out.write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps({k: v for k, v in figures.items() if not k.startswith("stages")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
