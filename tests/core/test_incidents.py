"""kbx.core.incidents: kbx's own faults as one line each, their traces in the run folder's logs;
a kbx thread's uncaught CUDA error is such a line, not a traceback; a subprocess's streams go to
a log file of their own."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from kbx.core import incidents


def test_a_kbx_threads_cuda_error_is_one_line_naming_its_trace(tmp_path, capfd):
    incidents.open_logs(tmp_path)
    assert threading.excepthook is incidents.thread_hook

    def fails() -> None:
        raise RuntimeError("CUDA error: an illegal memory access was encountered\nmore text")

    thread = threading.Thread(target=fails, name="kbx-load")
    thread.start()
    thread.join()
    err = capfd.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1
    line = err.strip()
    assert line.startswith("kbx: thread kbx-load: RuntimeError: CUDA error: an illegal memory")
    trace = Path(line.rsplit("(trace: ", 1)[1].rstrip(")"))
    assert trace.parent == tmp_path / "logs"
    assert (
        "Traceback (most recent call last)" in trace.read_text()
        and "more text" in trace.read_text()
    )


def test_other_threads_keep_pythons_report(tmp_path, capfd):
    incidents.open_logs(tmp_path)

    def fails() -> None:
        raise ValueError("not kbx's")

    thread = threading.Thread(target=fails, name="someone-else")
    thread.start()
    thread.join()
    assert "Traceback" in capfd.readouterr().err  # not kbx's thread: not kbx's to hide


def test_without_a_run_folder_nothing_is_kept(tmp_path, monkeypatch):
    monkeypatch.setitem(incidents._state, "folder", None)
    assert incidents.save("x", "trace") is None and incidents.where(None) == ""
    assert incidents.stream("x") is None


def test_a_process_whose_streams_go_to_its_log_prints_nothing(tmp_path):
    """As a worker process does (``to_log``): what it and its libraries print, a traceback
    included, lands in its file."""
    log = tmp_path / "worker.log"
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from kbx.core import incidents\n"
        f"incidents.to_log(Path({str(log)!r}))\n"
        "print('hello')\n"
        "raise RuntimeError('CUDA error: out of memory')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stdout == "" and proc.stderr == ""
    text = log.read_text()
    assert "hello" in text and "Traceback" in text and "CUDA error: out of memory" in text
