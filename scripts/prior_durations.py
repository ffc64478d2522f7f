"""Write the job times kbx orders a run by on a machine that has none of its own
(``src/kbx/run/durations.json``, read by ``kbx.run.plan.expected``) from a run's records.

Usage: python scripts/prior_durations.py RECORDS.jsonl "WHERE AND HOW THEY WERE MEASURED"
Only the order matters: a machine's own job times, once it has some, replace these and set
their scale (``plan.expected``).
"""

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src" / "kbx" / "run" / "durations.json"


def main(records: str, measured: str) -> int:
    seconds: dict[str, float] = {}
    for line in Path(records).read_text().splitlines():
        record = json.loads(line)
        if record.get("task_id") and record.get("duration_s"):
            seconds[record["task_id"]] = round(float(record["duration_s"]), 1)
    body = {"measured": measured, "seconds": dict(sorted(seconds.items()))}
    OUT.write_text(json.dumps(body, indent=1) + "\n")
    print(f"{len(seconds)} tasks -> {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
