"""Write a run's records as JSON lines, also of a run a time limit stopped (read from its store).

Usage: PYTHONPATH=src python scripts/save_records.py RUN_DIR OUT.jsonl
Prints how many records it wrote; writes nothing (and says so) where the run left no store.
"""

import json
import sys
from pathlib import Path

from kbx.commands.report import load_records


def main(run_dir: str, out: str) -> int:
    run = Path(run_dir)
    if not (run / "kbx.sqlite").exists() and not (run / "results.jsonl").exists():
        print(f"{run.name}: no records")
        return 0
    records = load_records(run)
    Path(out).write_text("".join(json.dumps(r) + "\n" for r in records))
    print(f"{run.name}: {len(records)} records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
