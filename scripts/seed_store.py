"""Seed a run folder's store from an exported results.jsonl, so that `kbx eval` resumes from it.

Usage: python scripts/seed_store.py RESULTS.jsonl RUN_DIR/kbx.sqlite
(e.g. a partial GPU run committed under docs/validation/, to finish it in a later device call:
candidates whose file is unchanged are skipped, changed ones are evaluated again).
"""

import sys
from pathlib import Path

from kbx.run.store import Store


def main(results: str, db: str) -> int:
    store = Store(Path(db))
    try:
        added = store.seed(Path(results))
        print(f"{db}: {added} records added, {len(store.keys())} in all")
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
