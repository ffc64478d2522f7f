"""What a run writes: per method and round a KernelBench-X JSONL, a trace JSONL of every
prompt, reply, extracted code, evaluator outcome and decision, and the run manifest.

Round files are written whole at the end of a method, rows sorted by task and sample, with only
what a cached replay reproduces exactly, so a re-run gives the same bytes.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Pick:
    """One output row: the kernel a method gives for a task in a round."""

    task_id: str
    round: int
    code: str
    sample: int = 0
    meta: dict[str, Any] = field(default_factory=dict)


def round_path(out: Path, round_: int) -> Path:
    return out / f"round_{round_}.jsonl"


def write_rounds(
    out: Path, method: str, model: str, seed: int | None, picks: list[Pick]
) -> list[Path]:
    rounds = sorted({p.round for p in picks})
    paths = []
    for r in rounds:
        rows = sorted((p for p in picks if p.round == r), key=lambda p: (p.task_id, p.sample))
        lines = [json.dumps(row(p, method, model, seed), ensure_ascii=False) for p in rows]
        path = round_path(out, r)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in lines))
        paths.append(path)
    return paths


def row(pick: Pick, method: str, model: str, seed: int | None) -> dict[str, Any]:
    base = {
        "file": f"{pick.task_id}.py",
        "predict": pick.code,
        "method": method,
        "model": model,
        "round": pick.round,
        "sample": pick.sample,
        "seed": seed,
    }
    return {**base, **pick.meta}


class Trace:
    """Appends one JSON event a line, flushed as it comes; safe from several threads."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.file = path.open("w")
        self.lock = threading.Lock()

    def event(self, event: str, task_id: str, **fields: Any) -> None:
        record = {"t": round(time.time(), 3), "event": event, "task_id": task_id, **fields}
        with self.lock:
            self.file.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            self.file.flush()

    def close(self) -> None:
        self.file.close()


def write_manifest(out: Path, manifest: dict[str, Any]) -> Path:
    path = out / "manifest.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=2, default=str) + "\n")
    return path
