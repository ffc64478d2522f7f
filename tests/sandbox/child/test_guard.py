"""The child's audit hook: candidate code may not reach kbx's state, start processes or load
native code; kbx's, torch's and triton's own code may do all of it.  Trust goes by code identity:
code that was not loaded from a trusted file by the import machinery bound before the install is
the candidate's, whatever its file name.  Each case runs in a fresh interpreter (an audit hook
cannot be removed), with a 'candidate' file outside the trusted folders, the hook installed from
frozen copies of kbx's modules as the child does (``bound``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

RUNNER = """
import importlib.util, sys
from kbx.sandbox.child import bound, guard
bound.freeze().modules["kbx.sandbox.child.guard"].install()
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
        ("open", "open('/proc/self/mem', 'rb')"),
        (
            "object.__setattr__",
            "from kbx.sandbox.child import opcheck\nopcheck.issuer.__defaults__ = ()",
        ),
        ("sys._getframe", "import logging\nlogging.currentframe()"),
    ],
)
def test_candidate_code_is_refused(tmp_path: Path, event: str, code: str) -> None:
    done = run_candidate(tmp_path, code + "\n")
    assert done.returncode != 0
    assert f"PermissionError: kbx: a candidate may not use {event} (candidate.py:" in done.stderr


def test_the_candidate_adds_no_audit_hook(tmp_path: Path) -> None:
    """A hook of the candidate's would run inside kbx's own work (an ``open``, an ``exec``):
    the guard refuses ``sys.addaudithook``, which Python turns into a hook not added."""
    code = "import sys\nseen = []\nsys.addaudithook(lambda e, a: seen.append(e))\n"
    code += "open(__file__).close()\nprint('seen', len(seen))\n"
    done = run_candidate(tmp_path, code)
    assert "seen 0" in done.stdout, done.stderr[-2000:]


WALK = "import gc\\ndef find():\\n    return gc.get_objects()\\n"


@pytest.mark.parametrize(
    "made",
    [
        # a name in site-packages, absolute and relative to the working folder
        "import torch, os\nname = torch.__file__",
        "import torch, os\nname = os.path.relpath(torch.__file__)",
        # the import machinery's name, and a path in the standard library
        "name = '<frozen importlib._bootstrap>'",
        "import os\nname = os.path.join(os.path.dirname(os.__file__), 'x.py')",
        # kbx's own folder
        "import kbx, os\nname = os.path.join(os.path.dirname(kbx.__file__), 'x.py')",
    ],
)
def test_code_compiled_under_any_name_is_the_candidate_s(tmp_path: Path, made: str) -> None:
    code = made + f"\nhelper = {{}}\nexec(compile('{WALK}', name, 'exec'), helper)\n"
    code += "helper['find']()\n"
    done = run_candidate(tmp_path, code)
    assert "a candidate may not use gc.get_objects" in done.stderr, done.stderr[-2000:]


def test_code_renamed_through_marshal_is_the_candidate_s(tmp_path: Path) -> None:
    code = f"""
import marshal, torch
site = torch.__file__
code = compile('{WALK}', 'x' * len(site), 'exec')
helper = {{}}
exec(marshal.loads(marshal.dumps(code).replace(b'x' * len(site), site.encode())), helper)
helper['find']()
"""
    done = run_candidate(tmp_path, code)
    assert "a candidate may not use gc.get_objects" in done.stderr, done.stderr[-2000:]


def test_a_loader_of_the_candidate_s_makes_no_trusted_code(tmp_path: Path) -> None:
    """A ``SourceFileLoader`` subclass handing back its own source for a trusted path: the
    machinery compiles it under that name, but the loader is not the one bound at install."""
    code = f"""
import importlib.machinery, importlib.util, torch
class Loader(importlib.machinery.SourceFileLoader):
    def get_data(self, path):
        return b'{WALK}'
    def path_stats(self, path):
        raise OSError
spec = importlib.util.spec_from_loader('helper', Loader('helper', torch.__file__))
helper = importlib.util.module_from_spec(spec)
spec.loader.exec_module(helper)
helper.find()
"""
    done = run_candidate(tmp_path, code)
    assert "a candidate may not use gc.get_objects" in done.stderr, done.stderr[-2000:]


def test_a_package_taking_frames_for_the_candidate_is_refused(tmp_path: Path) -> None:
    """pydantic's ``parent_frame_namespace`` called by candidate code hands back a caller's
    locals: refused, though its code is trusted (``tests/exploits/package_frame_locals``)."""
    code = "from pydantic._internal._typing_extra import parent_frame_namespace\n"
    code += "parent_frame_namespace(parent_depth=2, force=True)\n"
    done = run_candidate(tmp_path, code)
    assert "a candidate may not use sys._getframe (candidate.py:2" in done.stderr, done.stderr


def test_library_code_on_the_candidates_behalf_is_not_refused(tmp_path: Path) -> None:
    """Imports (compiling stdlib modules), torch's own frame and gc use (a lazy import inside
    torch.save reads its caller's frame: trusted code the import machinery loads after the
    install), the standard library's name and text readers (namedtuple, typing, a formatted
    stack), and a plain candidate computing with Python all work under the hook."""
    code = "import json, colorsys, fractions, io, traceback, typing, collections\nimport torch\n"
    code += "x = torch.ones(3).sum().item()\ntorch.save(torch.ones(2), io.BytesIO())\n"
    code += "P = collections.namedtuple('P', 'a b')\nclass Q(typing.NamedTuple):\n    a: int\n"
    code += "print('ok', x)\n"
    done = run_candidate(tmp_path, code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ok 3.0" in done.stdout


def test_the_hook_cannot_be_removed_or_rewired(tmp_path: Path) -> None:
    """The hook runs frozen copies: rebinding the guard module's names changes nothing."""
    code = "import sys\nsys.audit_hooks = []\nfrom kbx.sandbox.child import guard\n"
    code += (
        "guard.DENIED = frozenset()\nguard.asker = lambda *a: None\nimport gc\ngc.get_objects()\n"
    )
    done = run_candidate(tmp_path, code)
    assert "a candidate may not use gc.get_objects" in done.stderr, done.stderr[-2000:]


def test_each_code_file_is_resolved_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a code object's file lies is looked up once per file name, by the kernel
    (``/proc/self/fd``), not by the standard library's ``realpath`` the candidate could
    replace."""
    from kbx.sandbox.child import guard

    here = str(Path(__file__).resolve().parent) + "/"
    state = {"trusted": (here,), "files": {}, "reals": {}, "codes": {}}
    opened: list[str] = []
    real = guard._open

    def counted(path: str, flags: int) -> int:
        opened.append(path)
        return real(path, flags)

    monkeypatch.setattr(guard, "_open", counted)
    for _ in range(50):
        assert guard.file_kind(state, __file__) == "trusted"
    assert opened.count(__file__) == 1
