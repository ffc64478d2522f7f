"""What a run folder's logs say about where a run's time went, for a figure's file: the baselines
stage (``logs/baselines-stage-*.log``, one line per task), the GPU lock's holds
(``gpu*.lock.log``, by purpose), the memory budget's waits (``gpu-memory.log``); the cores'
share comes from ``throughput.cpu_shares``.

A step cut off by its time limit still has them up to the cut, so a fresh machine's first run
tells whether its baselines stage waited on the CPU (inductor's compiles) or on the GPU lock
(the timings' exclusive holds) even when no candidate finished.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

TASK_LINE = re.compile(
    r"^(?P<task>\S+) start (?P<start>[\d.]+) waited_for_room (?P<waited>[\d.]+) "
    r"measured (?P<wall>[\d.]+) cpu (?P<cpu>[\d.]+)"
    r"(?: peak_mib (?P<peak>\d+) kept_mib (?P<kept>\d+) estimate_mib (?P<estimate>\d+))?$"
)
END_LINE = re.compile(r"^stage (?P<s>[\d.]+) s, (?P<n>\d+) tasks$")
FIELDS = ("n", "held_s", "waited_s")  # a lock log's figures per mode and purpose


def stage(run_dir: Path, cores: int) -> dict[str, Any]:
    """The baselines stage: tasks measured, its wall time (None: cut before its end), the
    workers' CPU seconds and their share of the cores over the stage, the waits for room in the
    GPU's memory budget, the five tasks whose measurement took longest, and the workers' peaks of
    GPU memory against the budget's estimates (``estimates``)."""
    rows: list[dict[str, Any]] = []
    total_s: float | None = None
    for path in sorted((run_dir / "logs").glob("baselines-stage-*.log")):
        for line in path.read_text(errors="replace").splitlines():
            if found := TASK_LINE.match(line.strip()):
                row = found.groupdict()
                rows.append(
                    {k: v if k == "task" else float(v) for k, v in row.items() if v is not None}
                )
            elif found := END_LINE.match(line.strip()):
                total_s = float(found["s"])
    if not rows:
        return {"tasks": 0, "stage_s": total_s}
    span = total_s or max(r["start"] + r["wall"] for r in rows)
    cpu = sum(r["cpu"] for r in rows)
    slowest = sorted(rows, key=lambda r: -r["wall"])[:5]
    return {
        "tasks": len(rows),
        "stage_s": total_s,
        "span_s": round(span, 1),
        "worker_cpu_s": round(cpu, 1),
        "cores_busy_share": round(cpu / (span * cores), 3) if span > 0 else None,
        "waited_for_room_s": round(sum(r["waited"] for r in rows), 1),
        "measured_s": round(sum(r["wall"] for r in rows), 1),
        "slowest": [{"task": r["task"], "wall_s": r["wall"], "cpu_s": r["cpu"]} for r in slowest],
        "memory": estimates(rows),
    }


def estimates(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The workers' peaks of reserved GPU memory against the budget's estimates: how many tasks
    went over theirs, the five furthest over (MiB), and the most a worker kept after a task."""
    known = [r for r in rows if "peak" in r]
    over = sorted(
        (r for r in known if r["peak"] > r["estimate"]), key=lambda r: r["estimate"] - r["peak"]
    )
    return {
        "tasks": len(known),
        "over_estimate": len(over),
        "furthest_over": [
            {"task": r["task"], "peak_mib": int(r["peak"]), "estimate_mib": int(r["estimate"])}
            for r in over[:5]
        ],
        "kept_mib_max": int(max((r["kept"] for r in known), default=0)),
    }


def purpose(what: str) -> str:
    """A hold's purpose without its task: ``eager Math/add`` is ``eager``."""
    return what.split(" ")[0] if what.split(" ")[0] in ("eager", "compile", "check") else what


def lock(run_dir: Path) -> dict[str, Any]:
    """Per GPU lock, per mode and purpose: holds, seconds held and seconds waited before them
    (shared holds under 50 ms are not logged: their share is a lower bound); how long the lock
    was held at all, exclusively and shared (``held_s``: the union of the holds, so that shared
    holds side by side count once); and the tasks whose named holds (a baseline's timings,
    ``eager Math/add``) held it longest."""
    out: dict[str, Any] = {}
    for path in sorted(run_dir.glob("gpu*.lock.log")):
        by: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(FIELDS, 0.0))
        spans: dict[str, list[tuple[float, float]]] = {"ex": [], "sh": []}
        tasks: dict[str, float] = defaultdict(float)
        for line in path.read_text(errors="replace").splitlines():
            try:
                hold = json.loads(line)
                what, mode = str(hold["what"]), str(hold["mode"])
                held, waited, t = float(hold["held_s"]), float(hold["waited_s"]), float(hold["t"])
            except (ValueError, KeyError, TypeError):
                continue  # a child can write anything there
            row = by[f"{mode} {purpose(what)}"]
            row["n"] += 1
            row["held_s"] += held
            row["waited_s"] += waited
            spans.setdefault(mode, []).append((t - held, t))
            if "/" in what and " " in what:
                tasks[what.split(" ", 1)[1]] += held
        rounded = {k: {m: round(v, 1) for m, v in row.items()} for k, row in by.items()}
        every = [span for found in spans.values() for span in found]
        first = min((a for a, _ in every), default=None)
        last = max((b for _, b in every), default=None)
        span = round(last - first, 1) if first is not None and last is not None else None
        held = {mode: round(union(found), 1) for mode, found in spans.items()}
        longest = sorted(tasks.items(), key=lambda kv: -kv[1])[:TOP_TASKS]
        out[path.name] = {
            "span_s": span,
            "held_s": round(union(every), 1),
            "held_by_mode_s": held,
            "by_purpose": dict(sorted(rounded.items())),
            "longest_tasks": [{"task": task, "held_s": round(s, 1)} for task, s in longest],
        }
    return out


TOP_TASKS = 8  # tasks named in a lock's figure (``lock``)


def union(spans: list[tuple[float, float]]) -> float:
    """Seconds covered by at least one of the (begin, end) ``spans``."""
    total, end = 0.0, float("-inf")
    for begin, finish in sorted(spans):
        if finish > end:
            total += finish - max(begin, end)
            end = finish
    return total


def memory(run_dir: Path) -> dict[str, Any]:
    """The GPU memory budget's log (``gpu-memory.log``): the budget, the reservations that ran
    alone (over the whole budget: everything else waited for them), the waits for room and the
    guard's holds (the card fuller than the accounting)."""
    path = run_dir / "gpu-memory.log"
    if not path.exists():
        return {}
    start: dict[str, Any] = {}
    alone: list[dict[str, Any]] = []
    granted, guards = [], 0
    for line in path.read_text(errors="replace").splitlines():
        try:
            row = json.loads(line)
            event = row["event"]
        except (ValueError, KeyError, TypeError):
            continue
        if event == "start" and not start:
            start = {k: row.get(k) for k in ("budget", "context", "context_measured")}
        elif event == "alone":
            gb = round(float(row.get("bytes", 0)) / 1e9, 1)
            alone.append({"what": row.get("what"), "gb": gb})
        elif event == "granted":
            granted.append(float(row.get("waited_s", 0.0)))
        elif event == "guard":
            guards += 1
    return {
        **start,
        "alone": alone[:10],
        "alone_n": len(alone),
        "waits_over_1s": len(granted),
        "waited_s": round(sum(granted), 1),
        "guard_holds": guards,
    }
