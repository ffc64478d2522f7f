"""The reference solutions: one per task; each launches Triton, calls no torch compute, and its
kernels compile for Hopper (sm_90) with the real compiler, not only in the CPU interpreter."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbx.suite import load_suite
from tests.conftest import REFERENCE, ROOT

ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"))


def audit(folder: Path, specs: Path, shards: int = 2) -> list[dict]:
    """The audit's rows, from ``shards`` processes at once (one a core of CI's two); their
    launch specs end up in ``specs``."""
    env = dict(ENV, TRITON_INTERPRET="1")
    parts = [specs.with_suffix(f".{i}.jsonl") for i in range(shards)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "kbx.audit.solutions", str(folder), str(part), f"{i}/{shards}"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, part in enumerate(parts)
    ]
    outs = [proc.communicate(timeout=3000) for proc in procs]
    for proc, (_, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err[-2000:]
    specs.write_text("".join(part.read_text() for part in parts))
    lines = [line for out, _ in outs for line in out.splitlines()]
    return [json.loads(line) for line in lines if line.startswith("{")]


def compile_for_hopper(specs: Path) -> list[dict]:
    out = subprocess.run(
        [sys.executable, "-m", "kbx.audit.hopper", str(specs)],
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
        timeout=3000,
    )
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def reference_audit(tmp_path_factory):
    specs = tmp_path_factory.mktemp("audit") / "specs.jsonl"
    return audit(REFERENCE, specs), specs


def test_one_solution_per_task():
    files = {str(p.relative_to(REFERENCE).with_suffix("")) for p in REFERENCE.rglob("*.py")}
    assert files == set(load_suite())


def test_solutions_launch_triton_and_call_no_torch_compute(reference_audit):
    rows, _ = reference_audit
    assert len(rows) == len(load_suite())
    bad = {
        r["task_id"]: (r.get("error"), r["launches"], r["forbidden"])
        for r in rows
        if r.get("error") or r["launches"] < 1 or r["forbidden"]
    }
    assert not bad


def test_solution_kernels_compile_for_hopper(reference_audit):
    _, specs = reference_audit
    rows = compile_for_hopper(specs)
    assert {r["task_id"] for r in rows} == set(load_suite())
    failed = {(r["task_id"], r["kernel"]): r["error"] for r in rows if not r["ok"]}
    assert not failed


def write(folder: Path, rel: str, code: str) -> None:
    path = folder / rel
    path.parent.mkdir(parents=True)
    path.write_text(code)


def test_audit_catches_torch_compute(tmp_path):
    write(
        tmp_path,
        "Activation/gelu.py",
        "import torch, triton, triton.language as tl\n\n"
        "@triton.jit\n"
        "def _noop(x_ptr):\n"
        "    pass\n\n"
        "def gelu(input, approximate='none'):\n"
        "    _noop[(1,)](input)\n"
        "    return torch.nn.functional.gelu(input) * 1.0\n",
    )
    (row,) = audit(tmp_path, tmp_path / "specs.jsonl")
    cases = len(load_suite()["Activation/gelu"].cases)
    assert row["launches"] == cases  # every correctness case is run
    assert row["forbidden"] == {"gelu": cases, "mul": cases}


def test_hopper_compile_catches_what_the_interpreter_runs(tmp_path):
    # tl.dot needs blocks of at least 16: the interpreter multiplies 8x8 blocks happily
    write(
        tmp_path,
        "MatrixMultiply/matmul.py",
        "import torch, triton, triton.language as tl\n\n"
        "@triton.jit\n"
        "def _mm8(a_ptr, b_ptr, c_ptr, B: tl.constexpr):\n"
        "    i = tl.arange(0, B)\n"
        "    a = tl.load(a_ptr + i[:, None] * B + i[None, :])\n"
        "    b = tl.load(b_ptr + i[:, None] * B + i[None, :])\n"
        "    tl.store(c_ptr + i[:, None] * B + i[None, :], tl.dot(a, b))\n\n"
        "def matmul(tensor1, tensor2):\n"
        "    a = torch.empty((8, 8), dtype=torch.float32)\n"
        "    _mm8[(1,)](a, a, a, B=8)\n"
        "    return a\n",
    )
    specs = tmp_path / "specs.jsonl"
    (row,) = audit(tmp_path, specs)
    assert row["launches"] == len(load_suite()["MatrixMultiply/matmul"].cases)
    (compiled,) = compile_for_hopper(specs)  # one distinct launch
    assert compiled["kernel"] == "_mm8" and not compiled["ok"]
