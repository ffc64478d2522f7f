"""Seed a baseline cache's job times (the scheduler's longest-first order) from run records.

Usage: python scripts/seed_durations.py CACHE.sqlite RECORDS.jsonl [MORE.jsonl ...]
Each task gets its duration from the first file that has it; a later file's durations are scaled
to the first's by the median ratio over the tasks both have (runs of other code or load differ
in scale, less in order).  Tasks the cache already has are left alone: times measured on the
machine win.  A cold run on a fresh machine otherwise starts in suite order and can end with a
linear-algebra task running alone (fused_cholesky_solve: 252 s of one job on the H200).
"""

import json
import statistics
import sys
from pathlib import Path

from kbx.evaluate.baselines import BaselineCache


def durations(path: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("duration_s"):
            out[record["task_id"]] = float(record["duration_s"])
    return out


def main(cache_path: str, *files: str) -> int:
    merged: dict[str, float] = {}
    for name in files:
        found = durations(Path(name))
        common = [t for t in found if t in merged]
        scale = statistics.median(merged[t] / found[t] for t in common) if common else 1.0
        for task, seconds in found.items():
            merged.setdefault(task, seconds * scale)
    cache = BaselineCache(Path(cache_path))
    known = cache.durations()
    added = {t: s for t, s in merged.items() if t not in known}
    for task, seconds in added.items():
        cache.put_duration(task, round(seconds, 3))
    print(f"{len(added)} job times seeded ({len(known)} already known) into {cache_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
