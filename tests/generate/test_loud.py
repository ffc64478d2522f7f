"""Generation fails loudly: no endpoint, a dead one, a refused key or an unknown model stop
``kbx generate`` before the first task with one line and exit 2; calls that fail after their
retries are counted per task, tabled, and end the command with exit 1 unless partial runs are
accepted; the progress line says what happened to each task; unpriced is never $0.  All against
a real HTTP server on loopback (tests/generate/server.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbx.cli import main
from tests.conftest import ROOT
from tests.generate.conftest import fenced, reference
from tests.generate.server import FakeServer
from tests.generate.test_command import FAST

SIX = "Math/abs,Math/add,Math/asin,Math/cos,Math/digamma,Activation/relu"
DEAD_S = 10.0  # the acceptance: a dead endpoint stops the command within this


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def generate(tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """``kbx generate --method claude`` in a subprocess, as a user runs it; code and output."""
    config = tmp_path / "kbx.toml"
    config.write_text(FAST)
    cmd = [sys.executable, "-m", "kbx", "generate", "--method", "claude", "--device", "cpu"]
    cmd += ["--out", str(tmp_path / "run"), "--config", str(config), *extra]
    base = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(
        cmd, cwd=ROOT, env={**base, **(env or {})}, capture_output=True, text=True, timeout=300
    )
    return done.returncode, done.stdout + done.stderr


def test_a_dead_endpoint_stops_the_command_within_seconds(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    began = time.monotonic()
    code, out = generate(tmp_path, "--tasks", "Math/abs", "--base-url", url)
    took = time.monotonic() - began
    assert code == 2 and took < DEAD_S, (took, out)
    assert out.strip() == f"{url} cannot be used: connection failed: Connection refused", out
    assert not (tmp_path / "run" / "round_0.jsonl").exists()


def test_no_endpoint_is_an_error_not_a_default_host(tmp_path: Path) -> None:
    code, out = generate(tmp_path, "--tasks", "Math/abs")
    assert code == 2 and out.strip().startswith("no endpoint: give --base-url URL"), out


def test_a_refused_key_and_an_unknown_model_stop_it(server: FakeServer, tmp_path: Path) -> None:
    server.key = "right"
    env = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "wrong"}
    code, out = generate(tmp_path, "--tasks", "Math/abs", env=env)
    assert code == 2 and f"{server.url} refused the key (HTTP 401" in out, out
    env["OPENAI_API_KEY"] = "right"
    code, out = generate(tmp_path, "--tasks", "Math/abs", "--model", "no-such-model", env=env)
    assert code == 2 and f"{server.url} does not serve the model 'no-such-model'" in out, out
    assert not server.requests  # the probe asks for no completion: nothing was spent


def test_a_half_dead_endpoint_exits_non_zero_with_the_counts(
    server: FakeServer, tmp_path: Path
) -> None:
    """Every third prompt fails with a 500, its retries too: 2 of 6 tasks get no reply."""
    server.fail_every = 3
    server.respond = lambda body: fenced("x = 1\n")
    env = {"OPENAI_BASE_URL": server.url}
    code, out = generate(tmp_path, "--tasks", SIX, env=env)
    assert code == 1, out
    no_reply = [ln for ln in out.splitlines() if ": no reply (HTTP 500 from the server" in ln]
    assert len(no_reply) == 2 and all("(after 5 retries)" in ln for ln in no_reply), out
    assert "6 calls (0 from the cache, 2 failed)" in out
    assert "2 calls failed after their retries (the table above)" in out
    assert out.count("│ 1     │ 1      │ HTTP 500") == 2, out  # the table: a row per task
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["cost"]["total"]["failed_calls"] == 2 and len(manifest["errors"]) == 2
    code, out = generate(tmp_path, "--tasks", SIX, "--accept-partial", env=env)
    assert code == 0 and "6 calls (4 from the cache, 2 failed)" in out, out


def test_progress_says_what_happened_and_unpriced_is_not_free(
    server: FakeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """GEAK on two tasks: one solved in both rounds (the second fresh), one failing (so its
    second round debugs); each progress line names the passes and the modes, and every trace
    event its round."""
    server.respond = lambda body: fenced(
        reference("Math/abs") if "`abs`" in body["messages"][-1]["content"] else "x = 1\n"
    )
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    config = tmp_path / "kbx.toml"
    config.write_text(FAST + "[method]\nrounds = 2\ncandidates = 1\nllm_scoring = false\n")
    out = tmp_path / "geak"
    argv = ["generate", "--method", "geak", "--out", str(out), "--device", "cpu"]
    assert main([*argv, "--config", str(config), "--tasks", "Math/abs,Math/add"]) == 0
    printed = capsys.readouterr().out
    assert "Math/abs: 2/2 passed; modes fresh, fresh" in printed, printed
    assert "Math/add: 0/2 passed; modes fresh, debug" in printed, printed
    assert "unpriced (no [prices] for the model in --config)" in printed and "$0" not in printed
    events = [json.loads(line) for line in (out / "trace.jsonl").read_text().splitlines()]
    assert all("round" in e for e in events), [e for e in events if "round" not in e][:1]
    modes = [(e["task_id"], e["round"], e["mode"]) for e in events if e["event"] == "mode"]
    assert sorted(modes) == [
        ("Math/abs", 0, "fresh"), ("Math/abs", 1, "fresh"),
        ("Math/add", 0, "fresh"), ("Math/add", 1, "debug"),
    ]  # fmt: skip
    assert {e["round"] for e in events if e["event"] == "llm" and e["task_id"] == "Math/add"} == {
        0,
        1,
    }


STOP_S = 2.0  # the acceptance: Ctrl-C to exit


def test_ctrl_c_of_kbx_run_geak_ends_within_seconds_and_resumes(
    server: FakeServer, tmp_path: Path
) -> None:
    """Ctrl-C while the judge's thread is inside the evaluator (a GEAK candidate in flight):
    exit 130 within STOP_S, one hint line, no process left; the same command then finishes
    without asking the model again for what it had answered."""
    from tests.test_exploits import leftovers, processes, subreaper
    from tests.test_interrupt import default_sigint

    server.respond = lambda body: fenced(reference("Math/abs"))
    config = tmp_path / "kbx.toml"
    config.write_text(FAST + "[method]\nrounds = 1\ncandidates = 1\nllm_scoring = false\n")
    out, log = tmp_path / "run", tmp_path / "log.txt"
    cmd = [sys.executable, "-m", "kbx", "run", "--method", "geak", "--out", str(out)]
    cmd += ["--tasks", "Math/abs", "--device", "cpu", "--config", str(config), "--bootstrap", "20"]
    env = {**os.environ, "OPENAI_BASE_URL": server.url}
    before = {(p.pid, p.start) for p in processes().values()}
    subreaper(True)
    try:
        with open(log, "wb") as sink:
            proc = subprocess.Popen(
                cmd, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=default_sigint,
            )  # fmt: skip
        trace = out / "trace.jsonl"
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if trace.exists() and '"event": "llm"' in trace.read_text():
                break
            time.sleep(0.05)
        time.sleep(1.0)  # the candidate is in the evaluator now (its child takes seconds)
        assert proc.poll() is None and '"event": "eval"' not in trace.read_text()
        os.killpg(proc.pid, signal.SIGINT)
        sent = time.monotonic()
        try:
            code = proc.wait(timeout=30)
        finally:
            stop_s = time.monotonic() - sent
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        left = leftovers(before, grace_s=3.0)
    finally:
        subreaper(False)
    text = log.read_text()
    assert code == 130 and stop_s < STOP_S, (code, stop_s, text[-2000:])
    hints = [ln for ln in text.splitlines() if "run the same command again to resume" in ln]
    assert len(hints) == 1 and "Traceback" not in text, text[-2000:]
    assert not left, left
    asked = len(server.answered)
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    kinds = [b["messages"][-1]["content"][:40] for b in server.answered[asked:]]
    assert len(kinds) == 1, kinds  # the reflection only: the generation came from the cache
    assert json.loads((out / "manifest.json").read_text())["final"]["solved"] == 1
