"""The trusted baseline process: torch.compile of a reference runs its graphs under the GPU lock."""

import json
from pathlib import Path

import torch

from kbx.evaluate.baseline_worker import compiled
from kbx.gpu.gpulock import shared


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x) * 2.0


def holds(lock: str) -> list[tuple[str, str]]:
    log = Path(lock + ".log")
    if not log.exists():
        return []
    return [(h["mode"], h["what"]) for h in map(json.loads, log.read_text().splitlines())]


def test_a_compiled_graph_first_runs_under_an_exclusive_hold(tmp_path: Path):
    """Its first run (inductor benchmarks kernel configs then) comes outside the engine's holds:
    exclusive.  Later runs inside a warm-up's or a timing's hold take none of their own."""
    lock = str(tmp_path / "gpu0.lock")
    x = torch.randn(1000)
    fn = compiled(reference, lock)
    torch.testing.assert_close(fn(x), reference(x))
    assert holds(lock) == [("ex", "compile first run")]
    with shared(lock, "compile warm-up"):
        torch.testing.assert_close(fn(x + 1), reference(x + 1))
    assert holds(lock) == [("ex", "compile first run")]  # the short shared hold is not logged
    torch._dynamo.reset()


def test_without_a_lock_it_is_plain_torch_compile(tmp_path: Path):
    x = torch.randn(257)
    torch.testing.assert_close(compiled(reference, None)(x), reference(x))
    torch._dynamo.reset()
