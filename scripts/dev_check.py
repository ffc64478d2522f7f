"""Developer aid: run one solution file against one task in-process on the CPU interpreter.

Usage: PYTHONPATH=src python scripts/dev_check.py Category/name path/to/solution.py
Not the evaluator (no sandbox, no timeouts): use ``kbx eval`` for verdicts.
"""

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")

from kbx.evaluate import check as reference  # noqa: E402
from kbx.gpu.placement import CPU
from kbx.sandbox.child import entry as loader  # noqa: E402
from kbx.sandbox.child import (
    launches,  # noqa: E402
    runner,  # noqa: E402
)
from kbx.suite import find  # noqa: E402
from kbx.suite.verdict import Reject  # noqa: E402


class Print:
    def send(self, event: str, **fields: object) -> None:
        print(event, fields, flush=True)


def main() -> int:
    task = find(sys.argv[1])
    assert task is not None, f"no task {sys.argv[1]}"
    t0 = time.time()
    plan = runner.Plan.build(task, CPU, bench=False)
    counter = launches.install_launch_counter(interpreted=True)
    loader.CANDIDATE_PATH = sys.argv[2]
    try:
        entry = loader.import_entry(task, Path(sys.argv[2]).resolve())
        outputs = runner.run_cases(task, plan, entry, counter, Print())
        reference.judge(task, outputs)
    except loader.CandidateFailure as f:
        print("FAILED", f.verdict, f.detail)
        return 1
    except Reject as r:
        print("FAILED", r.verdict, r.detail)
        return 1
    print(f"passed in {time.time() - t0:.1f}s, {counter.launches} launches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
