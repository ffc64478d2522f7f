"""Summarize a known-bad corpus run: did each candidate get the verdict its folder names?

Usage: python scripts/bad_summary.py RESULTS.jsonl OUT.jsonl  (prints one line per candidate)
for runs over tests/bad or tests/gpu_bad (candidates known bad on the GPU only).
"""

import json
import sys
from pathlib import Path


def origin(source: str) -> str:
    """The corpus file a run's source came from (the GPU scripts evaluate tests/bad and
    tests/gpu_bad copied into one folder and name both tests/bad/...)."""
    rel = source.split("bad/", 1)[1]
    for corpus in ("tests/bad", "tests/gpu_bad"):
        if Path(corpus, rel).exists():
            return f"{corpus}/{rel}"
    return source


def main(results: str, out: str) -> int:
    rows = []
    with open(results) as f:
        records = [json.loads(line) for line in f]
    for r in records:
        want = r["source"].split("bad/", 1)[1].split("/")[0]  # tests/bad/<v>/, tests/gpu_bad/<v>/
        ok = r["verdict"] == want
        detail = r["detail"][:300]
        rows.append(
            {"folder": want, "source": origin(r["source"]), "verdict": r["verdict"], "ok": ok}
        )
        rows[-1]["detail"] = detail
    with open(out, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    good = sum(r["ok"] for r in rows)
    print(f"known-bad: {good}/{len(rows)} got their folder's verdict")
    for r in rows:
        print("  ok    " if r["ok"] else "  WRONG ", r["source"], r["verdict"], r["detail"][:160])
    return 0 if good == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
