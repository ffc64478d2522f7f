"""The README as a newcomer reads it: how to run kbx after ``make demo``, and a Python example
that runs as written on a CPU machine."""

import re
import subprocess
import sys

from kbx.cli import build_parser
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()


def test_the_readme_says_how_to_run_kbx_after_make_demo():
    assert "make demo" in README and ".venv/bin/kbx" in README
    assert "source .venv/bin/activate" in README


def test_the_python_example_runs_as_written_on_the_cpu():
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert blocks, "the README has a Python example"
    for code in blocks:
        assert 'device="cpu")' in code  # a CPU clone runs it
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "Traceback" not in proc.stderr


def test_eval_help_gives_the_timeout_defaults():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    text = sub.choices["eval"].format_help()  # type: ignore[attr-defined]
    assert "default: 60, 120" in " ".join(text.split())
