"""``kbx run`` and ``kbx generate`` as a user runs them: flags and TOML into the config, one
command from generation to analysis, and a run killed with SIGKILL resuming without repeating
a finished call."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbx.cli import build_parser, main
from tests.conftest import ROOT
from tests.generate.server import FakeServer, prompt_of
from tests.generate.test_oneshot import reply, rows

FAST = "[client]\nbackoff_min_s = 0.01\nbackoff_max_s = 0.05\ntimeout_s = 5\n"


def test_kbx_run_generates_evaluates_and_analyzes(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.respond = reply
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    config = tmp_path / "kbx.toml"
    config.write_text(
        FAST + "[prices.claude-sonnet-4]\ninput_per_mtok = 3.0\noutput_per_mtok = 15.0\n"
    )
    out = tmp_path / "run"
    args = [
        "run",
        "--method",
        "claude",
        "--out",
        str(out),
        "--device",
        "cpu",
        "--config",
        str(config),
    ]
    code = main([*args, "--tasks", "Math/abs,Math/add,Activation/relu", "--bootstrap", "50"])
    assert code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["client"]["model"] == "claude-sonnet-4"
    assert manifest["config"]["client"]["base_url"] == server.url
    assert manifest["final"]["solved"] == 2 and manifest["final"]["tasks"] == 3
    assert manifest["cost"]["total"]["usd"] > 0 and manifest["final"]["usd_per_solved"] > 0
    results = rows(out / "eval" / "results.jsonl")
    assert {r["method"] for r in results} == {"claude"}
    assert all(r["meta"]["cost"]["calls"] == 1 for r in results)  # cost rides into each result
    assert (out / "analysis" / "analysis.json").exists() and (out / "trace.jsonl").exists()
    requests = len(server.requests)
    assert main([*args, "--tasks", "Math/abs,Math/add,Activation/relu", "--bootstrap", "50"]) == 0
    assert len(server.requests) == requests  # the same command again: all from the cache


def test_a_bad_config_key_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[method]\nrounds = 0\n")
    out = str(tmp_path / "o")
    code = main(
        ["generate", "--method", "geak", "--out", out, "--device", "cpu", "--config", str(config)]
    )
    assert code == 2
    assert f"{config}: key 'method.geak.rounds'" in capsys.readouterr().out


def test_generate_and_run_are_registered() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert {"generate", "run"} <= set(sub.choices)  # type: ignore[attr-defined]


TASKS = "Math/abs,Math/add,Math/asin,Math/cos,Math/digamma,Activation/relu"


def wait_for(server: FakeServer, answered: int) -> None:
    deadline = time.monotonic() + 60
    while len(server.answered) < answered and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)  # that reply is committed by now; the next is in flight


def test_a_stopped_run_resumes_without_repeating_finished_calls(
    server: FakeServer, tmp_path: Path
) -> None:
    """Ctrl-C first (a clean stop, exit 130), then SIGKILL, then the same command to the end."""
    server.delay_s = 0.3
    server.respond = lambda body: "```python\nx = 1\n```"
    config = tmp_path / "kbx.toml"
    config.write_text(FAST + "concurrency = 1\n")
    out = tmp_path / "killed"
    command = [sys.executable, "-m", "kbx", "generate", "--method", "claude", "--out", str(out)]
    command += ["--tasks", TASKS, "--device", "cpu", "--config", str(config)]
    env = {**os.environ, "OPENAI_BASE_URL": server.url}
    proc = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 60
    while len(server.answered) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)  # the third reply is committed by now; the fourth is in flight
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished = {prompt_of(b) for b in server.answered}
    assert 3 <= len(finished) < 6 and not (out / "round_0.jsonl").exists()

    before = len(server.requests)
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    again = [prompt_of(b) for b in server.requests[before:]]
    assert not finished & set(again) and len(again) == 6 - len(finished)
    assert len(rows(out / "round_0.jsonl")) == 6


def test_the_documented_toml_example_is_a_valid_config(tmp_path: Path) -> None:
    import argparse
    import re

    from kbx.generate.command import run_config

    doc = (ROOT / "docs" / "design" / "generate.md").read_text()
    config = tmp_path / "doc.toml"
    config.write_text(re.findall(r"```toml\n(.*?)```", doc, re.S)[0])
    args = argparse.Namespace(
        config=str(config), method="geak", samples=None, base_url=None, model=None, tasks=None
    )
    run = run_config(args, "cpu")
    assert run.client.max_tokens_cap == 8192 and run.method.rounds == 3  # type: ignore[union-attr]
    assert run.prices["deepseek-chat"].output_per_mtok == 0.42


def test_without_the_generate_extra_it_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # `import openai` now fails
    for name in [m for m in sys.modules if m.startswith("kbx.generate.")]:
        if name not in ("kbx.generate.command", "kbx.generate.config"):
            monkeypatch.delitem(sys.modules, name)
    args = ["generate", "--method", "claude", "--out", str(tmp_path), "--device", "cpu"]
    assert main([*args, "--tasks", "Math/abs"]) == 2
    out = capsys.readouterr().out
    assert "kbx generate needs openai: pip install 'kernelbench-x[generate]'" in out
