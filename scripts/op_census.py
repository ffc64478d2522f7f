"""Which aten operations each solution's calls run outside its Triton launches, and how long its
benchmark cases take in the CPU interpreter: the data behind ``sandbox/evidence.py``'s glue
list and the CPU benchmark-size budget.

``TRITON_INTERPRET=1 PYTHONPATH=src python scripts/op_census.py solutions/reference OUT.jsonl
[--bench] [--tasks GLOB]``: one JSON object per solution (trusted sets only: runs in-process).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import time
from pathlib import Path
from typing import Any

import torch

from kbx.core.candidate import read_source
from kbx.sandbox import evidence
from kbx.sandbox.child import launches, opcheck
from kbx.sandbox.child.entry import import_entry
from kbx.suite import find
from kbx.suite.tensors import fresh_arguments

MAX_BENCH_BYTES = 512 << 20  # benchmark cases larger than this are not run (--max-bench-mb)


def census(path: str, task_id: str, bench: bool, recorder: Any) -> dict[str, object]:
    task = find(task_id)
    assert task is not None
    row: dict[str, object] = {"task_id": task_id}
    entry = import_entry(task, Path(path).resolve())
    recorder.start()
    for case in task.cases:
        with recorder.harness():
            args, kwargs = fresh_arguments(task.make_inputs(case, "cpu"))
        entry(*args, **kwargs)
    row["ops"] = recorder.stop()
    row["compute"] = evidence.compute_ops(row["ops"])  # type: ignore[arg-type]
    if bench:
        spent: list[float | None] = []
        for case in task.bench:
            if task.bytes_moved(case) > MAX_BENCH_BYTES:
                spent.append(None)
                continue
            args, kwargs = fresh_arguments(task.make_inputs(case, "cpu"))
            began = time.process_time()
            entry(*args, **kwargs)
            spent.append(round(time.process_time() - began, 3))
        row["bench_cpu_s"] = spent
        row["bench_bytes"] = [int(task.bytes_moved(c)) for c in task.bench]
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("out")
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--tasks", default="*")
    parser.add_argument("--max-bench-mb", type=float, default=512.0)
    args = parser.parse_args()
    global MAX_BENCH_BYTES
    MAX_BENCH_BYTES = int(args.max_bench_mb * 2**20)
    recorder = opcheck.recorder()  # kbx's ranges as the child opens them
    launches.install_launch_counter(
        interpreted=True, marks=recorder.launches, libdevice_ranges=recorder.libdevice
    )
    torch.set_num_threads(1)
    with open(args.out, "w") as out:
        for cand in read_source(Path(args.folder)):
            if not fnmatch.fnmatch(cand.task_id, args.tasks):
                continue
            try:
                row = census(cand.source, cand.task_id, args.bench, recorder)
            except Exception as exc:  # noqa: BLE001 - reported per solution
                row = {"task_id": cand.task_id, "error": f"{type(exc).__name__}: {exc}"[:300]}
            out.write(json.dumps(row) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
