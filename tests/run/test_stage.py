"""The baselines stage's log (``kbx.run.stage``): a line per task with its wait for room, wall
and worker CPU seconds, then the stage's whole time; a task whose baselines fail is one line on
the terminal and left to its job."""

from contextlib import nullcontext

from kbx.core import incidents
from kbx.core.config import EvalConfig, Tuning
from kbx.evaluate import baselines
from kbx.gpu.placement import Placement
from kbx.run import stage


def test_the_stage_writes_each_tasks_seconds_and_its_own(monkeypatch, tmp_path, capsys):
    def fake_ms(self, task, kinds, place, wait=True):
        if task.id == "Math/sub":
            raise RuntimeError("its compile failed")
        self.waited[task.id] = 0.5
        self.spent[task.id] = (1.5, 3.0)
        return {}

    monkeypatch.setattr(baselines.Baselines, "ms", fake_ms)
    monkeypatch.setattr(baselines, "on_device", lambda gpu: nullcontext())
    previous = incidents.folder()
    incidents.open_logs(tmp_path)
    told: list[tuple[str, int]] = []
    try:
        cfg = EvalConfig(device="cuda", tuning=Tuning(baseline_workers=1), baseline_cache=None)
        place = lambda gpu: Placement("cuda", gpu, None, None, True)  # noqa: E731
        ids = ["Math/add", "Math/sub"]
        stage.measure(cfg, [0], place, ids, lambda task, left: told.append((task, left)))
    finally:
        incidents._state["folder"] = previous
    (log,) = (tmp_path / "logs").glob("baselines-stage-*.log")
    lines = log.read_text().splitlines()
    add = next(x for x in lines if x.startswith("Math/add start "))
    assert add.endswith(" waited_for_room 0.5 measured 1.5 cpu 3.0")
    assert lines[-1].startswith("stage ") and lines[-1].endswith(" s, 2 tasks")
    assert told[0] == ("", 2) and sorted(t for t, _ in told[1:]) == ["Math/add", "Math/sub"]
    assert "baselines of Math/sub (measured again with its candidate)" in capsys.readouterr().err
