"""The child's audit hook: candidate code may not reach kbx's state, start processes or load
native code; kbx's, torch's and triton's own code may do all of it.  Each case runs in a fresh
interpreter (an audit hook cannot be removed), with a 'candidate' file outside the trusted
folders."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

RUNNER = """
import importlib.util, sys
from kbx.sandbox.child import guard
guard.install()
spec = importlib.util.spec_from_file_location("cand", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
"""


def run_candidate(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "candidate.py"
    path.write_text(body)
    return subprocess.run(
        [sys.executable, "-c", RUNNER, str(path)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("event", "code"),
    [
        ("gc.get_objects", "import gc\ngc.get_objects()"),
        ("sys._getframe", "import sys\nsys._getframe(0)"),
        (
            "object.__getattr__",
            "try:\n    1/0\nexcept ZeroDivisionError as e:\n    e.__traceback__.tb_frame",
        ),
        ("ctypes.dlopen", "import ctypes\nctypes.CDLL(None)"),
        ("subprocess.Popen", "import subprocess\nsubprocess.run(['true'])"),
        ("os.fork", "import os\nos.fork()"),
        ("compile", "import torch\ncompile('x = 1', torch.__file__, 'exec')"),
        ("open", "open('/proc/self/mem', 'rb')"),
        (
            "object.__setattr__",
            "from kbx.sandbox.child import opcheck\nopcheck.own_op.__defaults__ = ()",
        ),
    ],
)
def test_candidate_code_is_refused(tmp_path: Path, event: str, code: str) -> None:
    done = run_candidate(tmp_path, code + "\n")
    assert done.returncode != 0
    assert f"PermissionError: kbx: a candidate may not use {event} (candidate.py:" in done.stderr


def test_library_code_on_the_candidates_behalf_is_not_refused(tmp_path: Path) -> None:
    """Imports (compiling stdlib modules), torch's own frame and gc use, and a plain candidate
    computing with Python all work under the hook."""
    code = "import json, colorsys, fractions\nimport torch\nx = torch.ones(3).sum().item()\n"
    code += "import traceback\nprint('ok', x)\n"
    done = run_candidate(tmp_path, code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ok 3.0" in done.stdout


def test_the_hook_cannot_be_removed(tmp_path: Path) -> None:
    code = "import sys\nsys.audit_hooks = []\nimport gc\ngc.get_objects()\n"
    done = run_candidate(tmp_path, code)
    assert "a candidate may not use gc.get_objects" in done.stderr


def test_each_code_file_is_resolved_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Events come by the thousand (Triton's launches read functions' ``__code__``): where a
    frame's file lies is looked up once per file name, not by a ``realpath`` per frame and
    event."""
    from kbx.sandbox.child import guard

    here = str(Path(__file__).resolve().parent) + "/"
    resolved: list[str] = []
    real = guard.os.path.realpath

    def counted(path: str, **kwargs: object) -> str:
        resolved.append(path)
        return real(path, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(guard.os.path, "realpath", counted)
    hook = guard.Guard((here,))

    def f() -> None:
        pass

    for _ in range(50):
        hook("object.__getattr__", (f, "__code__"))
    assert resolved.count(__file__) == 1
    assert hook.kinds[__file__] == "trusted"
