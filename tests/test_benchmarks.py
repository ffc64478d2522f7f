"""benchmarks/runlogs.py: what a run folder's logs say for a figure's file, read from logs
written as kbx writes them (``Budget.write``), a line a candidate could have garbled among them."""

import json
import sys

from kbx.gpu.budget import Budget
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import runlogs  # noqa: E402


def test_the_memory_log_names_reservations_that_ran_alone(tmp_path):
    log = tmp_path / "gpu-memory.log"
    room = Budget("gpu0", 100, log=log)
    room.write("start", budget=100, context=7, context_measured=True)
    room.reserve(500, "baselines Fusion/huge").release()  # type: ignore[union-attr]
    room.reserve(50, "job Math/add").release()  # type: ignore[union-attr]
    room.write("granted", what="job Math/mul", bytes=10, waited_s=2.5)
    with log.open("a") as f:
        f.write("not json\n" + json.dumps({"event": "guard"}) + "\n")
    got = runlogs.memory(tmp_path)
    assert got["budget"] == 100 and got["context_measured"] is True
    assert got["alone"] == [{"what": "baselines Fusion/huge", "gb": 0.0}] and got["alone_n"] == 1
    assert got["waits_over_1s"] == 1 and got["waited_s"] == 2.5 and got["guard_holds"] == 1
    assert runlogs.memory(tmp_path / "absent") == {}
