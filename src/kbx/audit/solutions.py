"""Audit a folder of solutions: each must launch Triton and call no torch compute in its wrapper.

Run as ``TRITON_INTERPRET=1 python -m kbx.audit.solutions solutions/reference [SPECS.jsonl]``
(the CPU interpreter; every correctness case of each solution: a kernel specialised for a later
case's dtype or mode can fail to compile where the first case's compiles;
docs/design/throughput.md, Correctness findings).  Prints one JSON object per solution:
``{"task_id", "launches", "forbidden": {name: count}, "error"}``; with SPECS.jsonl, also
writes every distinct kernel launch for ``kbx.audit.hopper`` to compile for sm_90.  Not a
sandbox: only for trusted solution sets such as kbx's own references.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from kbx.audit.hopper import spec_of
from kbx.audit.torchops import TorchCalls
from kbx.core.candidate import read_source
from kbx.sandbox.child import interp, launches
from kbx.sandbox.child.entry import CandidateFailure, import_entry
from kbx.suite import find
from kbx.suite.tensors import fresh_arguments


def audit_one(path: str, task_id: str, counter: launches.LaunchCounter) -> dict[str, Any]:
    task = find(task_id)
    row: dict[str, Any] = {"task_id": task_id, "source": path, "launches": 0, "forbidden": {}}
    if task is None:
        return dict(row, error="unknown task")
    try:
        entry = import_entry(task, Path(path).resolve())
        every = [task.make_inputs(case, "cpu") for case in task.cases]
        before = counter.launches
        with TorchCalls(lambda: counter.depth > 0) as calls:
            for inputs in every:
                args, kwargs = fresh_arguments(inputs)
                entry(*args, **kwargs)
        row["launches"] = counter.launches - before
        row["forbidden"] = calls.forbidden()
    except (Exception, CandidateFailure) as exc:  # noqa: BLE001 - reported, not raised
        row["error"] = f"{type(exc).__name__}: {exc}"[:300]
    return row


def record_launches(specs: list[dict[str, Any]]) -> tuple[dict[str, str], Any]:
    """A spec appended for every distinct interpreted launch: the current-solution slot, and the
    observer the launch gate calls with each launch it lets through (``state["observe"]``)."""
    current = {"task_id": "", "source": ""}
    seen: set[str] = set()

    def observe(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        spec = spec_of(kernel.fn, args, kwargs)
        if spec is not None:
            spec.update(current)
            key = json.dumps(spec, sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                specs.append(spec)

    return current, observe


def main(folder: str, specs_path: str | None = None, shard: str = "0/1") -> int:
    """Audit the solutions under ``folder`` (``shard`` ``i/n``: every n-th from the i-th, so n
    processes share the work), writing the launches' specs to ``specs_path``."""
    index, count = (int(part) for part in shard.split("/"))
    interp.settle()  # as in a child: before the launch gate takes the interpreter as it is
    specs: list[dict[str, Any]] = []
    current, observe = record_launches(specs)
    state = launches.new_state()
    state["observe"] = observe
    counter = launches.install_launch_counter(interpreted=True, state=state)
    for cand in read_source(Path(folder))[index::count]:
        current.update(task_id=cand.task_id, source=str(Path(cand.source).resolve()))
        print(json.dumps(audit_one(cand.source, cand.task_id, counter)), flush=True)
    if specs_path:
        Path(specs_path).write_text("".join(json.dumps(s, default=str) + "\n" for s in specs))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
