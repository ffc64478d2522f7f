"""Issue 29's item 4 on a GPU: ``kbx run --method geak`` through a loopback OpenAI-compatible
server with the evaluator on cuda (the speedups the prompts carry back as feedback), and the
Ray backend's verdicts on cuda against the local backend's over one slice.

Run from the repository root on a CUDA machine with the generate and ray extras importable:
    PYTHONPATH=src python3 scripts/gpu_clients.py generate ray --out clients.json
Prints the figures as JSON (and writes them with --out).  Baselines come from $KBX_CACHE_DIR.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kbx.core.candidate import Candidate, read_source  # noqa: E402
from kbx.suite import load_suite  # noqa: E402
from tests.generate.conftest import fenced  # noqa: E402
from tests.generate.server import FakeServer, prompt_of  # noqa: E402

REFERENCE = ROOT / "solutions" / "reference"
GEAK_TASKS = ("Activation/relu", "Activation/gelu", "Math/add", "Reduce/sum")
ENTRY = re.compile(r"Define a module-level function `(\w+)`")
SPEEDUP = re.compile(r"speedup over PyTorch eager: ([0-9.]+)")
SLICE = (
    "solutions/reference/Activation/relu.py",
    "solutions/reference/Activation/gelu.py",
    "solutions/reference/Math/add.py",
    "solutions/reference/Reduce/sum.py",
    "solutions/reference/MatrixMultiply/matmul.py",
    "solutions/reference/Normalization/batch_norm.py",
    "tests/bad/mismatch",
    "tests/bad/runtime_error",
    "tests/bad/no_triton",
    "tests/exploits/constant",
    "tests/exploits/identity",
)


@functools.cache
def task_of_entry() -> dict[str, str]:
    return {task.entry: task_id for task_id, task in load_suite().items()}


def reply_with_reference(body: dict[str, Any]) -> str:
    """The reference solution of the task the prompt names by its entry, fenced."""
    match = ENTRY.search(prompt_of(body))
    task_id = task_of_entry().get(match.group(1), "") if match else ""
    path = REFERENCE / f"{task_id}.py"
    return fenced(path.read_text() if task_id and path.exists() else "x = 1\n")


def generate(work: Path, device: str) -> dict[str, Any]:
    from kbx.cli import main

    server = FakeServer(reply_with_reference)
    try:
        os.environ["OPENAI_BASE_URL"] = server.url
        out = work / "geak"
        began = time.monotonic()
        code = main(
            ["run", "--method", "geak", "--out", str(out), "--device", device,
             "--tasks", ",".join(GEAK_TASKS), "--bootstrap", "200"]
        )  # fmt: skip
        wall_s = time.monotonic() - began
        prompts = [prompt_of(body) for body in server.requests]
    finally:
        server.stop()
    fed_back = [float(x) for p in prompts for x in SPEEDUP.findall(p)]
    results = [
        json.loads(line)
        for line in (out / "eval" / "results.jsonl").read_text().split("\n")
        if line
    ]
    manifest = json.loads((out / "manifest.json").read_text())
    return {
        "exit": code,
        "wall_s": round(wall_s, 1),
        "requests": len(prompts),
        "prompts_with_speedups": sum(bool(SPEEDUP.search(p)) for p in prompts),
        "speedups_fed_back": fed_back[:40],
        "final": {r["task_id"]: [r["verdict"], r.get("speedup")] for r in results},
        "manifest_final": manifest.get("final"),
    }


def slice_candidates() -> list[Candidate]:
    found: list[Candidate] = []
    for name in SLICE:
        found += read_source(ROOT / name)
    return found


def verdicts(ev: Any, chosen: list[Candidate]) -> dict[str, list[Any]]:
    with ev:
        return {c.source: [str(r.verdict), r.speedup, r.detail[:300]] for c, r in ev.pairs(chosen)}


def on_ray(device: str) -> dict[str, Any]:
    import ray

    from kbx.core.config import Tuning
    from kbx.run.evaluator import Evaluator
    from kbx.run.ray_backend import RayBackend, RayPool

    chosen = slice_candidates()
    began = time.monotonic()
    local = verdicts(Evaluator(device, perf=device == "cuda", tuning=Tuning(jobs=8)), chosen)
    local_s = time.monotonic() - began
    ray.init(
        num_cpus=8 if device == "cuda" else 2,
        num_gpus=1 if device == "cuda" else 0,
        include_dashboard=False,
        log_to_driver=False,
    )
    try:
        pool = RayPool(device, Tuning())
        began = time.monotonic()
        backend = RayBackend(device, device == "cuda", Tuning(), pool=pool)
        try:
            remote = verdicts(
                Evaluator(device, perf=device == "cuda", tuning=Tuning(jobs=8), backend=backend),
                chosen,
            )
        finally:
            pool.close()
        ray_s = time.monotonic() - began
    finally:
        ray.shutdown()
    same = {s: local[s][0] == remote.get(s, [None])[0] for s in local}
    return {
        "candidates": len(chosen),
        "identical_verdicts": all(same.values()) and set(local) == set(remote),
        "local_s": round(local_s, 1),
        "ray_s": round(ray_s, 1),
        "per_candidate": {s: {"local": local[s], "ray": remote.get(s)} for s in sorted(local)},
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("parts", nargs="+", choices=("generate", "ray"))
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--out", help="also write the figures to this JSON file")
    args = p.parse_args()
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="kbx-clients-") as tmp:
        for part in args.parts:
            try:
                figures[part] = (
                    generate(Path(tmp), args.device) if part == "generate" else on_ray(args.device)
                )
            except Exception as error:  # noqa: BLE001 - one part's failure is a figure too
                figures[part] = {"error": f"{type(error).__name__}: {error}"}
            print(json.dumps({part: figures[part]}, indent=1), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
