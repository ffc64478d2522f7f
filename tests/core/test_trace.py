"""Start-up marks are silent unless tracing is enabled, and reach the fork server by its
command line, never through the children's environment."""

import logging
from pathlib import Path

from kbx.core import trace
from kbx.sandbox.childenv import child_env, server_env
from kbx.sandbox.wire.job import ChildConfig


def test_marks_are_written_only_when_tracing_is_on(capsys):
    trace.LOG.setLevel(logging.WARNING)
    trace.mark("worker: imported")
    assert capsys.readouterr().err == ""
    trace.LOG.handlers.clear()  # a handler bound to this test's stderr
    trace.enable()
    try:
        trace.mark("worker: imported")
        line = capsys.readouterr().err
        assert line.startswith("kbx trace: pid ") and "worker: imported at " in line
    finally:
        trace.LOG.setLevel(logging.WARNING)
        trace.LOG.handlers.clear()


def test_tracing_leaves_the_environments_alone(tmp_path):
    cfg = ChildConfig(device="cpu", timed=False)
    trace.enable()
    try:
        assert not any(k.startswith("KBX_") for k in server_env(cfg))
        assert not any(k.startswith("KBX_") for k in child_env(Path(tmp_path), cfg))
    finally:
        trace.LOG.setLevel(logging.WARNING)
        trace.LOG.handlers.clear()
