"""Start-up marks are silent unless KBX_TRACE=1, and reach the fork server but not children."""

from pathlib import Path

from kbx import trace
from kbx.evaluate.sandbox import SandboxConfig, child_env, server_env


def test_marks_are_written_only_when_tracing_is_on(monkeypatch, capsys):
    monkeypatch.delenv("KBX_TRACE", raising=False)
    trace.mark("worker: imported")
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("KBX_TRACE", "1")
    trace.mark("worker: imported")
    line = capsys.readouterr().err
    assert line.startswith("kbx trace: pid ") and "worker: imported at " in line


def test_tracing_reaches_the_fork_server_but_not_the_candidates_children(monkeypatch, tmp_path):
    cfg = SandboxConfig(device="cpu", perf=False)
    monkeypatch.setenv("KBX_TRACE", "1")
    assert server_env(cfg).get("KBX_TRACE") == "1"
    assert "KBX_TRACE" not in child_env(Path(tmp_path), cfg)
    monkeypatch.delenv("KBX_TRACE")
    assert "KBX_TRACE" not in server_env(cfg)
