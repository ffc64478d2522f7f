"""kbx.commands.progress: a ``kbx eval`` run's progress from its first second, in logs and pipes
(pytest's capture is no terminal): the baselines stage's bar, which says why it runs, with its
count and an estimate of the time left while no result comes; past a wait without a result, the
candidates still running and the step each is at (real children); and kbx's own fault as one
line naming the candidate, its trace in the run folder, no traceback."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kbx.commands import progress
from kbx.commands.runcmds import run_with_progress
from kbx.core.activity import Activity
from kbx.core.candidate import Candidate
from kbx.core.config import EvalConfig, Limits, Tuning
from kbx.core.result import Result
from kbx.evaluate import baselines, check, pipeline
from kbx.run.evaluator import Evaluator
from kbx.run.scheduler import Scheduler
from kbx.suite.verdict import Verdict
from tests.conftest import REFERENCE
from tests.run.test_scheduler import gpu_setup  # noqa: F401 - the GPU set-up, recorded

TASKS = ("Math/add", "Math/sub", "Math/abs")


def source_of(tmp_path: Path, tasks: tuple[str, ...] = TASKS, prefix: str = "") -> Path:
    folder = tmp_path / "src"
    for task in tasks:
        (folder / task).parent.mkdir(parents=True, exist_ok=True)
        (folder / f"{task}.py").write_text(prefix + (REFERENCE / f"{task}.py").read_text())
    return folder


def test_the_baselines_stage_shows_why_it_runs_and_how_far_it_is(
    tmp_path,
    capsys,
    monkeypatch,
    gpu_setup,  # noqa: F811
):
    """A cold GPU run's stage, with fake baselines of a second each and the candidates' own
    evaluation recorded (both need a GPU): its bar comes first and says why, a line names the
    tasks being measured while no result has come, each measured task is counted with an
    estimate of what is left, and the candidates come only in the stage's tail, once its last
    task has begun (here: after the first two are measured)."""
    monkeypatch.setattr(progress, "STALL_S", 0.6)
    measuring = threading.Event()

    def slow_ms(self, task, kinds, place, wait=True):
        measuring.set()
        time.sleep(1.0)
        return {}

    monkeypatch.setattr(baselines.Baselines, "ms", slow_ms)
    monkeypatch.setattr(baselines, "on_device", lambda gpu: threading.Lock())  # no GPU here

    def passed(candidate, cfg, ctx=None):
        return Result.of(candidate, cfg.device, Verdict.PASSED, "recorded", "done")

    monkeypatch.setattr(pipeline, "evaluate", passed)
    gpu = EvalConfig(device="cuda", run_dir=tmp_path / "run", tuning=Tuning(baseline_workers=1))
    sched = Scheduler(gpu, jobs=1, gpus=[0]).start()
    out = tmp_path / "run"
    with Evaluator("cpu", run_dir=out, baselines=None, backend=sched) as ev:
        run_with_progress(source_of(tmp_path), out, ev, None)
    lines = capsys.readouterr().out.splitlines()
    title = "kbx: measuring eager and torch.compile baselines for this GPU "
    title += "(first run on this GPU; cached for later runs)"
    assert lines[0] == "kbx: evaluating" and title in lines
    stage = lines.index(title)
    waiting = [ln for ln in lines if "still running: baselines of Math/" in ln]
    assert waiting and "(measuring, " in waiting[0]  # no result yet: what the stage is doing
    counted = [ln for ln in lines if re.match(r"\[\d/3 \d+s( ETA \d+s)?\] Math/\w+: measured", ln)]
    assert len(counted) == 3 and "ETA" in counted[-2]  # counted, with the time left
    results = [i for i, ln in enumerate(lines) if ": passed" in ln]
    assert len(results) == 3 and min(results) > lines.index(counted[1]) > stage


def test_a_long_wait_names_the_candidates_still_running_and_where(tmp_path, capsys, monkeypatch):
    """Real children: a candidate that takes seconds at import is named, with its step, once no
    result has come for the watch's time."""
    monkeypatch.setattr(progress, "STALL_S", 1.0)
    slow = source_of(tmp_path, ("Math/add",), prefix="import time\ntime.sleep(4)\n")
    out = tmp_path / "run"
    tuning = Tuning(jobs=1, limits=Limits(import_s=60, case_s=60))
    with Evaluator("cpu", run_dir=out, baselines=None, tuning=tuning) as ev:
        run_with_progress(slow, out, ev, None)
    lines = capsys.readouterr().out.splitlines()
    still = [ln for ln in lines if "still running: Math/add (" in ln]
    assert still, lines
    assert any("still running: Math/add (import, " in ln for ln in still), still
    assert lines[-1].startswith("[1/1 ") and "Math/add: passed" in lines[-1]


class Bar:
    """The progress bar's calls the watch makes, kept."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def add_task(self, *args, **kwargs):
        return 0

    def note(self, task, text):
        self.notes.append(text)


def test_a_stall_names_the_gpu_lock_s_holder_and_dumps_the_stacks_once(tmp_path):
    """A run whose GPU lock another process holds: the stall line says who holds it, and once
    the stall is twice the watch's time, the run folder's ``logs/stalls.log`` has the holds
    and kbx's own stacks (a hold is logged only when it ends, so a stuck one shows only here)."""
    lock = tmp_path / "gpu0.lock"
    lock.touch()
    code = "import fcntl,sys,time; f=open(sys.argv[1],'a'); fcntl.flock(f,fcntl.LOCK_SH);"
    code += " print('held', flush=True); time.sleep(60)"
    owner = subprocess.Popen(
        [sys.executable, "-c", code, str(lock)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline() == "held\n"
        bar = Bar()
        busy = [Activity("Math/add", "cases 1", time.time(), time.time())]
        with progress.Watch(bar, lambda: busy, stall_s=0.3, run_dir=tmp_path):  # type: ignore[arg-type]
            time.sleep(1.6)
    finally:
        owner.kill()
        owner.wait()
    assert bar.notes and all(f"GPU lock held by {owner.pid} (" in n for n in bar.notes)
    dumped = [n for n in bar.notes if "stacks in " in n]
    assert len(dumped) == 1, bar.notes
    text = (tmp_path / "logs" / "stalls.log").read_text()
    assert f"{owner.pid} holds gpu0.lock (READ)" in text
    assert "test_progress.py" in text  # this process's stacks: the test sleeping in its watch
    assert "running: Math/add (cases 1, " in text
    assert text.count("no result for a while") == 1


def test_kbxs_own_fault_is_one_line_with_its_trace_in_the_run_folder(tmp_path, capsys, monkeypatch):
    """A CUDA error in the parent's check (raised here in place of the GPU's): the candidate's
    result is ``harness_error``, the terminal has one line naming it, the cause and the file
    that holds the whole trace, and no traceback."""

    def broken(*args, **kwargs):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(check, "judge", broken)
    out = tmp_path / "run"
    with Evaluator("cpu", run_dir=out, baselines=None, tuning=Tuning(jobs=1)) as ev:
        run_with_progress(source_of(tmp_path, ("Math/add",)), out, ev, None)
    captured = capsys.readouterr()
    said = [ln for ln in captured.out.splitlines() if ln.startswith("kbx: Math/add: ")]
    assert len(said) == 1, captured.out
    assert "harness_error" in said[0] and "CUDA error: an illegal memory access" in said[0]
    trace = Path(said[0].rsplit("(trace: ", 1)[1].rstrip(")"))
    assert trace.parent == out / "logs"
    assert "Traceback (most recent call last)" in trace.read_text()
    assert "Traceback" not in captured.out + captured.err


def test_a_fault_line_says_who_and_why():
    cand = Candidate("s", "Math/add", "x")
    ok = Result.of(cand, "cuda", Verdict.PASSED, "all cases match", "done")
    assert progress.fault_line(ok) is None
    ok.rerun = {"verdict": "out_of_memory", "detail": "CUDA out of memory", "why": "shared GPU"}
    line = progress.fault_line(ok)
    assert line is not None and line.startswith("kbx: Math/add: judged again alone (shared GPU")
    assert line.endswith("): passed")
    assert progress.running_line([], 31.4) == "no result for 31 s; still running: nothing"


@pytest.mark.parametrize("count, tasks, why", [(5, 5, "first run on this GPU"), (2, 5, "2 of 5")])
def test_the_stage_title_says_why(count, tasks, why):
    title = progress.baselines_title("NVIDIA H100 80GB HBM3", count, tasks, compile_too=False)
    assert title.startswith("measuring eager baselines for NVIDIA H100 80GB HBM3 (")
    assert why in title and title.endswith("cached for later runs)")
