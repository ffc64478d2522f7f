"""Check a corpus run on a GPU: did each candidate get the verdict its corpus expects?

Usage: PYTHONPATH=src python scripts/expect_check.py RUN_DIR|RESULTS.jsonl [OUT.jsonl]

A run folder's records are read from its store too, so that a run a time limit stopped is
checked as far as it got.

Each record's source is mapped back to the repository file it was copied from (the GPU scripts
copy the corpora into one folder, ``.../corpus/<corpus>/...``, for one run).  The expected
verdict: the ``Expect:`` (or ``Expect on cuda:``, where ``a or b`` accepts either) line of an
exploit's docstring (tests/exploits, tests/exploits_gpu); the folder name in tests/bad,
tests/gpu_bad and tests/gpu_faults; ``passed`` for a reference solution
(``.../corpus/reference/...``).  Prints one line per candidate and a count; exit 1 on any
mismatch.
"""

import json
import re
import sys
from pathlib import Path

from kbx.commands.report import load_records

EXPECT = re.compile(r"Expect: ([a-z_]+)\b")
EXPECT_CUDA = re.compile(r"Expect on cuda: ([a-z_]+(?: or [a-z_]+)*)\b")  # "a or b": either


def origin(source: str) -> Path:
    rel = source.rsplit("/corpus/", 1)[1].split(":", 1)[0]
    corpus, rest = rel.split("/", 1)
    return Path("solutions/reference" if corpus == "reference" else f"tests/{corpus}", rest)


def expected(path: Path) -> str:
    if path.parts[0] == "solutions":
        return "passed"
    if path.parts[1] in ("exploits", "exploits_gpu"):
        doc = path.read_text().split('"""')[1]
        cuda = EXPECT_CUDA.search(doc)
        found = cuda or EXPECT.search(doc)
        return found.group(1) if found else "?"
    return path.parts[2]


def main(results: str, out: str | None = None) -> int:
    rows = []
    given = Path(results)
    if given.is_dir():
        records = load_records(given)
    else:
        records = [json.loads(line) for line in given.read_text().splitlines()]
    for r in records:
        path = origin(r["source"])
        want = expected(path)
        rows.append(
            dict(
                file=str(path),
                expected=want,
                verdict=r["verdict"],
                ok=r["verdict"] in want.split(" or "),
                speedup=r.get("speedup"),
                sandbox=r.get("sandbox"),
                detail=r["detail"][:300],
            )
        )
    if out:
        Path(out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    good = sum(r["ok"] for r in rows)
    for r in sorted(rows, key=lambda r: (r["ok"], r["file"])):
        mark = "ok   " if r["ok"] else "WRONG"
        print(mark, r["file"], r["verdict"], f"(expected {r['expected']})", r["detail"][:140])
    print(f"{good}/{len(rows)} got their expected verdict")
    return 0 if good == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
