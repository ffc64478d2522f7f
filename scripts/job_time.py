"""Where a run's job time went: per stage over all jobs, and the longest jobs.

Usage: python scripts/job_time.py RUN.jsonl [N]
Reads the records of one run (``kbx eval``'s results, or ``save_records.py``'s copy) and prints
the jobs' summed duration, each stage's sum (``stage_s``: the child's setup, its lock waits,
the parent's check and its lock waits, ...) with its share of that sum, and the N (default 15)
longest jobs with their largest stages.  With every job slot kept busy, a run's wall time is
about the summed job time over the slots, so the large sums are where a faster run comes from.
"""

from __future__ import annotations

import sys

import pandas as pd

SHOWN = ("setup", "setup_inputs", "lock", "run", "timing", "load", "check", "check_wait")


def main(path: str, n: int) -> None:
    records = pd.read_json(path, lines=True)
    stages = pd.json_normalize(records["stage_s"].tolist()).fillna(0.0)
    stages.index = records["task_id"]
    total = records["duration_s"].sum()
    print(f"{len(records)} jobs, {total:.1f} s of job time")
    sums = stages.sum().sort_values(ascending=False)
    table = pd.DataFrame({"job_s": sums.round(1), "share": (sums / total).round(3)})
    print(table.to_string())
    print("(check_wait is part of check, setup_* of setup; child_cpu is CPU time, not a stage)")
    longest = records.nlargest(n, "duration_s").set_index("task_id")
    shown = [s for s in SHOWN if s in stages.columns]
    print(f"\nthe {n} longest jobs:")
    print(longest[["duration_s"]].join(stages[shown]).round(1).to_string())


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 15)
