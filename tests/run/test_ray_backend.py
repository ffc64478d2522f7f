"""The Ray backend on a local Ray instance (2 CPUs): the verdicts of a small slice are those of
the local backend, and ``kbx eval --backend ray`` runs through it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from kbx.core.candidate import Candidate, make  # noqa: E402
from kbx.core.config import Tuning  # noqa: E402
from kbx.run.evaluator import Evaluator  # noqa: E402
from kbx.run.ray_backend import RayBackend, RayPool  # noqa: E402
from tests.conftest import BAD, REFERENCE, ROOT  # noqa: E402

SLICE = [
    ("Activation/relu", (REFERENCE / "Activation" / "relu.py").read_text()),
    ("Activation/relu", "import torch\n\ndef relu(x):\n    return torch.relu(x)\n"),
    ("Activation/gelu", (REFERENCE / "Activation" / "gelu.py").read_text()),
    ("Activation/relu", "def relu(x):\n    raise ValueError('no')\n"),
    ("Math/nope", "x = 1"),  # decided by the read stage, a fractional-CPU task on Ray
    ("Activation/relu", ""),
]


def candidates() -> list[Candidate]:
    return [make(f"slice:{i}", task, code) for i, (task, code) in enumerate(SLICE)]


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def verdicts(ev: Evaluator) -> dict[str, str]:
    with ev:
        return {c.source: str(r.verdict) for c, r in ev.pairs(candidates())}


def test_ray_verdicts_match_the_local_backend(local_ray: None) -> None:
    tuning = Tuning(jobs=2)
    local = verdicts(Evaluator("cpu", perf=False, tuning=tuning))
    pool = RayPool("cpu", Tuning())
    assert len(pool.actors) == 2 and pool.slots == 2  # one single-slot actor per CPU
    backend = RayBackend("cpu", False, Tuning(), pool=pool)
    try:
        on_ray = verdicts(Evaluator("cpu", perf=False, tuning=tuning, backend=backend))
    finally:
        pool.close()
    assert on_ray == local
    assert sorted(local.values()) == [
        "no_code", "no_triton", "passed", "passed", "runtime_error", "unknown_task"
    ]  # fmt: skip


def test_the_read_stage_screens_what_needs_no_child() -> None:
    from kbx.run.ray_backend import screen

    got = [screen(c, "cpu") for c in candidates()]
    assert [r.verdict if r else None for r in got] == [None] * 4 + ["unknown_task", "no_code"]
    assert all(r.stage == "read" for r in got if r)


def test_kbx_eval_runs_on_a_ray_backend(tmp_path: Path) -> None:
    out = tmp_path / "run"
    command = [sys.executable, "-m", "kbx", "eval", str(BAD / "mismatch"), "--device", "cpu"]
    command += ["--backend", "ray", "--out", str(out)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert records and {r["verdict"] for r in records} == {"mismatch"}


def test_kbx_serve_evaluates_on_a_ray_backend(tmp_path: Path) -> None:
    from kbx.client import Client
    from tests.serve.live import Server

    server = Server(tmp_path / "state", ["--backend", "ray"]).start()
    try:
        with Client(server.url) as client:
            assert client.request("GET", "/healthz")["backend"] == "ray"
            jobs = client.evaluate([(task, code) for task, code in SLICE[:2]])
    finally:
        server.stop()
    assert [job["result"]["verdict"] for job in jobs] == ["passed", "no_triton"]


def test_an_actors_run_folder_is_opened_to_the_sandboxed_childrens_uids() -> None:
    from kbx.run.ray_backend import EvaluatorActor

    actor = EvaluatorActor("cpu", 1)  # on a GPU, each child opens the GPU lock's files in it
    try:
        got = actor.evaluate(candidates()[0], False, Tuning().model_dump_json())
        assert str(got.verdict) == "passed", got.detail
        mode = actor.run_dir.stat().st_mode & 0o777
        assert mode == (0o755 if os.geteuid() == 0 else 0o700)
    finally:
        actor.close()
