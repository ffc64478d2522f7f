"""A candidate's compile stage (``kbx.sandbox.precompile``): on a machine without a GPU it
compiles the candidate's kernels for sm_90 into the store of that code on that task, where a
later child's launches find them under Triton's own key; it is confined, bounded in time, and
reaches no other code's store."""

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kbx.sandbox import kernels
from kbx.sandbox.folder import Folder
from kbx.sandbox.precompile import compile_ahead
from kbx.sandbox.servers import ForkServers
from kbx.sandbox.wire.job import ChildConfig
from kbx.suite import find
from tests.conftest import REFERENCE

RELU = (REFERENCE / "Activation" / "relu.py").read_text()


def stored(entry: Path | None) -> list[Path]:
    assert entry is not None
    return sorted(p for p in entry.rglob("*") if p.is_file()) if entry.is_dir() else []


@pytest.fixture(scope="module")
def pool():
    servers = ForkServers(0)
    yield servers
    servers.close()


def test_the_stage_leaves_sm90_kernels_in_its_codes_store_only(tmp_path, pool):
    cfg = ChildConfig(device="cuda", triton_cache=tmp_path / "store")
    figures = compile_ahead(find("Activation/relu"), RELU, cfg, 90, pool)
    entry = kernels.entry(cfg.triton_cache, "Activation/relu", RELU)
    files = stored(entry)
    cubins = [p for p in files if p.suffix == ".cubin"]
    assert cubins, f"no kernel compiled: {figures}"
    metadata = [json.loads(p.read_text()) for p in files if p.name == "_relu_kernel.json"]
    assert metadata and {m["target"]["arch"] for m in metadata} == {90}
    assert figures["ahead_bytes"] == sum(p.stat().st_size for p in files)
    assert [p.name for p in (tmp_path / "store").iterdir()] == [entry.name]  # no other code's


FOUND_AGAIN = textwrap.dedent(
    """
    import importlib.util, sys
    import torch
    from triton import knobs
    from triton.compiler.compiler import CompiledKernel
    from kbx.sandbox.child.precompile import CompileOnly
    from kbx.suite import find
    from triton.runtime.driver import driver

    driver.set_active(CompileOnly(90))
    launches, hits = [], []
    knobs.compilation.listener = lambda cache_hit, **_: hits.append(cache_hit)
    CompiledKernel.launch_metadata = lambda self, *a: None
    CompiledKernel.run = property(lambda self: lambda *a: launches.append(1))
    CompiledKernel.function = None
    CompiledKernel._init_handles = lambda self: None
    spec = importlib.util.spec_from_file_location("candidate", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    task = find("Activation/relu")
    for case in task.cases:
        x = task.make_inputs(case, "cpu")
        module.relu(*x.args, **dict(x.kwargs))
    print(len(launches), sum(hits), len(hits) - sum(hits))
    """
)


def test_a_later_child_finds_the_stages_kernels_under_tritons_key(tmp_path, pool):
    """Triton's own launch path (``JITFunction.run`` up to the launch, not the stage's compile
    only path) in a cache filled from the store as a GPU child's is (``kernels.fill``, in a
    folder at another path than the stage's): every kernel is a cache hit, none compiles.
    Copied as they are, Triton's group files would name the stage's removed folder and every
    kernel would compile again (docs/design/throughput.md, Compile ahead)."""
    cfg = ChildConfig(device="cuda", triton_cache=tmp_path / "store")
    compile_ahead(find("Activation/relu"), RELU, cfg, 90, pool)
    entry = kernels.entry(cfg.triton_cache, "Activation/relu", RELU)
    folder = Folder(str(tmp_path), 64 << 20, False)
    try:
        kernels.fill(entry, folder)
        cache = folder.path / kernels.CACHE
        (tmp_path / "relu.py").write_text(RELU)
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        env.update(TRITON_CACHE_DIR=str(cache), CUDA_VISIBLE_DEVICES="")
        proc = subprocess.run(
            [sys.executable, "-c", FOUND_AGAIN, str(tmp_path / "relu.py")],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        folder.close()
    assert proc.returncode == 0, proc.stderr[-2000:]
    launches, hits, compiled = map(int, proc.stdout.split()[-3:])
    assert launches >= 1 and hits >= 1
    assert compiled == 0  # each kernel from the stage's


HANGS = textwrap.dedent(
    """
    import os
    for path in (os.environ.get("KBX_STORE", ""), "/tmp"):
        try:
            open(os.path.join(path, "kbx-exploit-precompile"), "w").write("x")
        except OSError:
            pass
    while True:
        pass
    """
)


def test_a_hostile_stage_is_cut_at_its_limit_and_writes_nothing_outside(tmp_path, pool):
    store = tmp_path / "store"
    cfg = ChildConfig(device="cuda", triton_cache=store)
    code = HANGS.replace('os.environ.get("KBX_STORE", "")', repr(str(store)))
    began = time.monotonic()
    figures = compile_ahead(find("Activation/relu"), code, cfg, 90, pool, limit_s=3.0)
    assert time.monotonic() - began < 30
    assert 2.5 <= figures["ahead"] < 10
    assert not (store / "kbx-exploit-precompile").exists()
    assert not Path("/tmp/kbx-exploit-precompile").exists()
    assert figures["ahead_bytes"] == 0
