"""Children share nothing writable or connectable, and none can fill a disk another needs: hostile
children beside honest ones, two at a time, in the folders a real run uses (``runs/<time>/`` in
the checkout, a ``triton_cache`` shared across runs), with /dev/shm and the run folder each a
tmpfs of 300 MB, as on a small machine (``unshare -m``: the mounts are this test's alone).

The fillers fill every disk they can write (their folder, their kernel cache) and pass; the
relay pairs try a folder both could write (one code for two tasks), a unix socket another could
reach; the honest references beside them stay passed, and ``kbx eval`` exits 0."""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from tests.conftest import REFERENCE, ROOT

EXPLOITS = ROOT / "tests" / "exploits"
HOSTILE = {  # class -> what each of its files must get
    "shm_fill": "passed",
    "cache_fill": "passed",
    "cache_leftover_fill": "passed",
    "unix_socket_relay": "no_triton",
    "same_code_relay": "no_triton",
}
HONEST = ("Math/rsqrt", "Activation/relu_fp16")

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="mounting small disks for one run needs root and unshare",
)


def test_hostile_children_cost_honest_neighbours_nothing_on_small_disks(tmp_path):
    source = tmp_path / "source"
    for cls in HOSTILE:
        shutil.copytree(EXPLOITS / cls, source / cls)
    for task in HONEST:
        (source / "honest" / task).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REFERENCE / f"{task}.py", source / "honest" / f"{task}.py")
    runs = ROOT / "runs"
    made = not runs.exists()
    run = runs / f"isolation-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    run.mkdir(parents=True)
    config = tmp_path / "jobs2.toml"
    config.write_text(f'jobs = 2\ntriton_cache = "{run / "shared-cache"}"\n')
    kbx = [sys.executable, "-m", "kbx", "eval", str(source), "--device", "cpu"]
    kbx += ["--out", str(run / "out"), "--config", str(config), "--timeout-s", "20"]
    script = (
        f"mount -t tmpfs -o size=300m tmpfs /dev/shm && mount -t tmpfs -o size=300m tmpfs {run}"
        f" && {' '.join(kbx)} > {tmp_path / 'log'} 2>&1; echo $? > {tmp_path / 'rc'};"
        f" cp {run / 'out' / 'results.jsonl'} {tmp_path}/ 2>/dev/null; true"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200"}
    try:
        subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=ROOT, env=env, timeout=600)
    finally:
        shutil.rmtree(run, ignore_errors=True)
        if made:
            shutil.rmtree(runs, ignore_errors=True)
    log = (tmp_path / "log").read_text()[-2000:] if (tmp_path / "log").exists() else ""
    assert (tmp_path / "rc").read_text().strip() == "0", log
    records = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    got = {"/".join(r["source"].split("/")[-3:]): (r["verdict"], r["detail"]) for r in records}
    want = {
        "/".join(p.relative_to(source).parts): HOSTILE.get(p.relative_to(source).parts[0], "passed")
        for p in source.rglob("*.py")
    }
    assert set(got) == set(want), log
    wrong = {k: got[k] for k, v in want.items() if got[k][0] != v}
    assert not wrong, wrong
