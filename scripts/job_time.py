"""Where a run's job time went: per stage over all jobs, and the longest jobs.

Usage: python scripts/job_time.py RUN.jsonl [N]
Reads the records of one run (``kbx eval``'s results, or ``save_records.py``'s copy) and prints
the jobs' summed duration, each stage's sum (``stage_s``: the child's setup, its lock waits,
the parent's check and its lock waits, ...) with its share of that sum, and the N (default 15)
longest jobs with their largest stages (and, where the records have ``started_at``, when the last
job began and ended after the first began).  With every job slot kept busy, a run's wall time is
about the summed job time over the slots, so the large sums are where a faster run comes from.
"""

from __future__ import annotations

import json
import sys

import pandas as pd

SHOWN = (
    "start",
    "spawn",
    "setup",
    "setup_inputs",
    "lock",
    "run",
    "timing",
    "kill",
    "load",
    "check",
    "check_wait",
)


def main(path: str, n: int) -> None:
    with open(path) as lines:  # not read_json: it would turn ``started_at`` into dates
        records = pd.DataFrame([json.loads(line) for line in lines if line.strip()])
    stages = pd.json_normalize(records["stage_s"].tolist()).fillna(0.0)
    stages.index = records["task_id"]
    total = records["duration_s"].sum()
    print(f"{len(records)} jobs, {total:.1f} s of job time")
    if "started_at" in records and records["started_at"].notna().all():
        began = records["started_at"] - records["started_at"].min()
        ended = began + records["duration_s"]
        print(
            f"from the first job's start: the last job began after {began.max():.1f} s, "
            f"the last ended after {ended.max():.1f} s"
        )
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
