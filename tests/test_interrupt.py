"""Ctrl-C during ``kbx eval`` (issue 25): it stops within seconds, with exit code 130, a one-line
hint and no traceback, exports what was done, leaves no process behind, and the same command
resumes the run.

The run is a real ``kbx eval`` subprocess in a session of its own; SIGINT goes to its process
group, as a terminal's Ctrl-C does.  Its source is one quick candidate (a reference solution) and
candidates that spin at import until their CPU-time limit: when the quick one's result is stored,
the spinning ones are still in flight.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import JOBS2, REFERENCE, ROOT
from tests.test_exploits import leftovers, processes, subreaper

QUICK = "Activation/relu.py"
SPINNING = ("Math/abs.py", "Math/cos.py")  # references that spin forever once imported
TIMEOUT_S = 6  # CPU seconds of the spinning candidates' import, when the resumed run ends them
STOP_S = 10.0  # Ctrl-C to exit; it took up to 20 s before issue 25
FIRST_RESULT_S = 240.0  # the fork server's start and the quick candidate on a loaded machine


def make_source(folder: Path) -> Path:
    for name in (QUICK, *SPINNING):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        code = (REFERENCE / name).read_text()
        if name in SPINNING:
            code += "\n\nwhile True:  # the import never ends\n    pass\n"
        (folder / name).write_text(code)
    return folder


def stored(out: Path) -> int:
    """How many results the run folder's store holds (0 before it exists)."""
    try:
        db = sqlite3.connect(f"file:{out / 'kbx.sqlite'}?mode=ro", uri=True, timeout=1)
        try:
            return int(db.execute("SELECT count(*) FROM results").fetchone()[0])
        finally:
            db.close()
    except sqlite3.OperationalError:  # not made yet, or its table not yet
        return 0


def default_sigint() -> None:
    """SIGINT's default in the run: a shell that started the tests in the background (``&``)
    leaves it ignored, which every process inherits, and Python then keeps it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(source: Path, out: Path, log: Path) -> subprocess.Popen[bytes]:
    cmd = [str(Path(sys.executable).parent / "kbx"), "eval", str(source), "--device", "cpu"]
    cmd += ["--out", str(out), "--config", str(JOBS2), "--timeout-s", str(TIMEOUT_S)]
    with open(log, "wb") as sink:
        return subprocess.Popen(
            cmd,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=default_sigint,
        )


def records(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_ctrl_c_stops_quickly_exports_and_resumes(tmp_path: Path) -> None:
    source = make_source(tmp_path / "source")
    out, log = tmp_path / "run", tmp_path / "log.txt"
    before = {(p.pid, p.start) for p in processes().values()}
    subreaper(True)  # orphans of the run are re-parented here, where ``leftovers`` finds them
    try:
        proc = start(source, out, log)
        try:
            deadline = time.monotonic() + FIRST_RESULT_S
            while stored(out) == 0 and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            assert stored(out) >= 1 and proc.poll() is None, log.read_text()[-2000:]
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the terminal signals its foreground group
            sent = time.monotonic()
            code = proc.wait(timeout=60)
            stop_s = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            left = leftovers(before, grace_s=3.0)
    finally:
        subreaper(False)
    text = log.read_text()
    print(f"Ctrl-C to exit: {stop_s:.2f} s")  # shown with pytest -s
    assert code == 130, text[-2000:]
    assert stop_s < STOP_S, text[-2000:]
    assert "Traceback" not in text, text[-2000:]
    hints = [ln for ln in text.splitlines() if "run the same command again to resume" in ln]
    assert len(hints) == 1 and str(out) in hints[0], text[-2000:]
    assert not left, left
    done = records(out)
    assert 1 <= len(done) < 1 + len(SPINNING), done
    summary = json.loads((out / "summary.json").read_text())
    assert sum(summary["counts"].values()) == len(done), summary

    proc = start(source, out, log)  # the same command again
    assert proc.wait(timeout=FIRST_RESULT_S) == 0, log.read_text()[-2000:]
    left_to_do = 1 + len(SPINNING) - len(done)
    assert f"[{left_to_do}/{left_to_do} " in log.read_text()  # the stored ones were skipped
    final = records(out)
    wanted = [n.removesuffix(".py") for n in (QUICK, *SPINNING)]
    assert sorted(str(r["task_id"]) for r in final) == sorted(wanted)
    kept = {r["key"]: r["started_at"] for r in final}
    assert all(kept[r["key"]] == r["started_at"] for r in done)  # not evaluated again


def test_a_busy_job_thread_does_not_keep_an_interrupted_run_alive(tmp_path: Path) -> None:
    """A thread still busy after the Evaluator closed (a check begun before the Ctrl-C) would keep
    the interpreter alive until it is done: ``interrupted`` ends the process within its
    ``wait_s`` instead, with exit code 130 and its hint flushed."""
    (tmp_path / "kbx.sqlite").touch()  # a run folder with a store
    code = (
        "import sys, threading, time\n"
        "from pathlib import Path\n"
        "from kbx.commands.runcmds import interrupted\n"
        "threading.Thread(target=time.sleep, args=(120,)).start()\n"
        "raise SystemExit(interrupted(Path(sys.argv[1]), same_command=False, wait_s=0.5))\n"
    )
    began = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert proc.returncode == 130, proc.stderr
    assert f"results so far are in {tmp_path}; add --out {tmp_path} to resume" in proc.stdout
    assert time.monotonic() - began < 60  # the thread's 120 s: the process did not wait for it
