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


def test_the_lock_figure_counts_side_by_side_shared_holds_once_and_names_the_longest_tasks(
    tmp_path,
):
    """Holds as ``gpulock`` logs them (``t`` is a hold's end): two shared holds side by side
    cover 3 s, not 5; an exclusive one after them 1 s; a baseline's named timings add up by
    task; a line a child garbled counts nothing."""
    holds = [
        {"t": 3.0, "mode": "sh", "what": "baseline inputs", "waited_s": 0, "held_s": 3.0},
        {"t": 2.5, "mode": "sh", "what": "launch", "waited_s": 0, "held_s": 2.0},
        {"t": 4.0, "mode": "ex", "what": "eager Math/add", "waited_s": 1.0, "held_s": 0.75},
        {"t": 5.0, "mode": "ex", "what": "compile Math/add", "waited_s": 0, "held_s": 0.25},
        {"t": 6.0, "mode": "ex", "what": "eager Math/sub", "waited_s": 0, "held_s": 0.5},
    ]
    lines = [json.dumps(h) for h in holds] + ['{"t": "soon", "mode": "ex"}', "garbage"]
    (tmp_path / "gpu0.lock.log").write_text("\n".join(lines) + "\n")
    got = runlogs.lock(tmp_path)["gpu0.lock.log"]
    assert got["span_s"] == 6.0 and got["held_s"] == 4.5
    assert got["held_by_mode_s"] == {"ex": 1.5, "sh": 3.0}
    assert got["longest_tasks"] == [
        {"task": "Math/add", "held_s": 1.0},
        {"task": "Math/sub", "held_s": 0.5},
    ]
    assert got["by_purpose"]["ex eager"] == {"n": 2, "held_s": 1.2, "waited_s": 1.0}
