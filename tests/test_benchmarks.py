"""benchmarks/runlogs.py: what a run folder's logs say for a figure's file, read from logs
written as kbx writes them (``Budget.write``), a line a candidate could have garbled among them."""

import json
import sys
from pathlib import Path

from kbx.evaluate.baselines import Baselines
from kbx.gpu import footprint
from kbx.gpu.budget import Budget
from kbx.run import stage
from kbx.suite import find
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


def test_the_stage_log_gives_each_workers_peak_beside_the_budgets_estimate(tmp_path):
    """Lines as ``kbx.run.stage.line`` writes them: a task whose worker reported its peak of
    reserved GPU memory, one measured where no worker said (no figures), the stage's end."""
    store = Baselines()
    add, conv = find("Math/add"), find("Convolution/conv2d")
    assert add is not None and conv is not None
    estimate = footprint.baseline_bytes(add)
    store.spent = {add.id: (3.0, 1.5), conv.id: (9.0, 4.0)}
    store.waited = {add.id: 0.5}
    store.gpu_bytes = {add.id: {"peak_bytes": estimate + (300 << 20), "kept_bytes": 2 << 20}}
    (tmp_path / "logs").mkdir()
    lines = [stage.line(store, add, 1.0), stage.line(store, conv, 2.0), "stage 12.0 s, 2 tasks"]
    (tmp_path / "logs" / "baselines-stage-1-1.log").write_text("\n".join(lines) + "\n")
    got = runlogs.stage(tmp_path, cores=2)
    assert got["tasks"] == 2 and got["stage_s"] == 12.0 and got["waited_for_room_s"] == 0.5
    assert got["memory"] == {
        "tasks": 1,
        "over_estimate": 1,
        "furthest_over": [
            {"task": "Math/add", "peak_mib": (estimate >> 20) + 300, "estimate_mib": estimate >> 20}
        ],
        "kept_mib_max": 2,
    }


def test_a_reference_step_measures_a_fresh_machine_whatever_ran_before(tmp_path, monkeypatch):
    """Each variant's caches (kbx's baselines, inductor's and Triton's kernels) are new folders
    of its own, empty, whatever the environment named: a step after another is not warm."""
    import gpu

    monkeypatch.setenv("KBX_CACHE_DIR", str(tmp_path / "warm"))
    first = gpu.fresh_env("cuda", tmp_path / "reference-caches")
    second = gpu.fresh_env("cuda", tmp_path / "reference-jobs16-caches")
    for name in gpu.FRESH_CACHES:
        assert first[name] != second[name] and not any(Path(first[name]).iterdir())
    assert str(tmp_path / "warm") not in first.values()
