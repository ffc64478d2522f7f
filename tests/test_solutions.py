"""The reference solutions: one per task, each launches Triton and calls no torch compute."""

import json
import os
import subprocess
import sys

from kbx.suite import load_suite
from tests.conftest import REFERENCE, ROOT


def test_one_solution_per_task():
    files = {str(p.relative_to(REFERENCE).with_suffix("")) for p in REFERENCE.rglob("*.py")}
    assert files == set(load_suite())


def test_solutions_launch_triton_and_call_no_torch_compute():
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(ROOT / "src"))
    out = subprocess.run(
        [sys.executable, "-m", "kbx.evaluate.audit", str(REFERENCE)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == len(load_suite())
    bad = {
        r["task_id"]: (r.get("error"), r["launches"], r["forbidden"])
        for r in rows
        if r.get("error") or r["launches"] < 1 or r["forbidden"]
    }
    assert not bad


def test_audit_catches_torch_compute(tmp_path):
    bad = tmp_path / "Activation" / "gelu.py"
    bad.parent.mkdir()
    bad.write_text(
        "import torch, triton, triton.language as tl\n\n"
        "@triton.jit\n"
        "def _noop(x_ptr):\n"
        "    pass\n\n"
        "def gelu(input, approximate='none'):\n"
        "    _noop[(1,)](input)\n"
        "    return torch.nn.functional.gelu(input) * 1.0\n"
    )
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(ROOT / "src"))
    out = subprocess.run(
        [sys.executable, "-m", "kbx.evaluate.audit", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    (row,) = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    assert row["launches"] == 1
    assert set(row["forbidden"]) == {"gelu", "mul"}
