"""kbx's published figures as current results: one file per figure under ``benchmarks/results``,
each with what it was measured with (commit, date, GPU, driver, torch, triton, the command), and
the table of them (``benchmarks/results/README.md``) made from the files themselves, so that a
figure quoted anywhere can be checked against its file (``tests/test_readme.py``).

A new measurement overwrites its file; the history is git's.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
TABLE_BEGIN, TABLE_END = "<!-- figures: made by benchmarks/gpu.py --table -->", "<!-- /figures -->"
QUOTED_BEGIN = "<!-- measured: made from benchmarks/results by benchmarks/gpu.py --table -->"


def commit() -> str:
    """The commit measured: ``$KBX_COMMIT`` (a device machine's copy of the tree has no .git),
    else git's, marked ``+dirty`` where the tree has changes."""
    if os.environ.get("KBX_COMMIT"):
        return os.environ["KBX_COMMIT"]
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def machine(device: str) -> dict[str, Any]:
    """What a figure was measured with."""
    import torch
    import triton

    found: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit(),
        "device": device,
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cores": len(os.sched_getaffinity(0)),
    }
    if device == "cuda":
        found["gpu"] = torch.cuda.get_device_name(0)
        found["gpu_memory_mib"] = torch.cuda.get_device_properties(0).total_memory >> 20
        found["driver"] = smi("driver_version")
    return found


def smi(field: str) -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.splitlines()[0].strip() if out.strip() else None


def slug(device: str) -> str:
    """The file-name part for this machine's device: ``cpu``, or the GPU's model (``h100``,
    ``h200``, ``a100``, ``rtx4090``...) from its name."""
    if device != "cuda":
        return "cpu"
    import torch

    name = torch.cuda.get_device_name(0)
    found = re.search(r"\b(RTX\s?\d{4}|[ABHL]\d{1,3}S?|GB?\d{3})\b", name, re.I)
    return re.sub(r"\s", "", found.group(1)).lower() if found else re.sub(r"\W+", "-", name).lower()


def write(out: Path, name: str, figures: dict[str, Any], device: str, command: str) -> Path:
    """One figure's current file: ``figures`` with the machine and the command."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    record = {"figure": name.rsplit(".", 1)[0], **machine(device), "command": command, **figures}
    path.write_text(json.dumps(record, indent=1, sort_keys=False) + "\n")
    return path


def read_all(folder: Path = RESULTS) -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def current(record: dict[str, Any]) -> str:
    """A figure's value in a few words, from its file."""
    value = record.get("summary")
    return str(value) if value else "see the file"


def table(folder: Path = RESULTS) -> str:
    """The README's table of figures, made from the files."""
    rows = [
        "| figure | file | command that remakes it | target | current value | measured on |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, record in read_all(folder).items():
        where = record.get("gpu") or record.get("device", "")
        rows.append(
            f"| {record.get('title', record['figure'])} | [{name}]({name}) "
            f"| `{record['command']}` | {record.get('target', '-')} | {current(record)} "
            f"| {where}, {str(record.get('date', ''))[:10]}, {record.get('commit', '')} |"
        )
    return "\n".join(rows)


def quoted(folder: Path = RESULTS) -> str:
    """The figures the project's README quotes, a list item each (wrapped at 100 characters),
    with the machine, the date and the file; the results table lists them all."""
    lines = []
    for name, record in read_all(folder).items():
        where = record.get("gpu") or record.get("device", "")
        item = (
            f"- {record.get('title', record['figure'])}: **{current(record)}** ({where}, "
            f"{str(record.get('date', ''))[:10]}; [{name}](benchmarks/results/{name}))"
        )
        lines += textwrap.wrap(
            item, 100, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
        )
    return "\n".join(lines)


def between(text: str, begin: str, body: str) -> str:
    """``text`` with what stands between ``begin`` and the next ``<!-- /figures -->`` replaced."""
    head, rest = text.split(begin, 1)
    _, tail = rest.split(TABLE_END, 1)
    return f"{head}{begin}\n{body}\n{TABLE_END}{tail}"


def refresh_table(folder: Path = RESULTS) -> None:
    """Rewrite the results table and the README's quoted figures from the files."""
    readme = folder / "README.md"
    readme.write_text(between(readme.read_text(), TABLE_BEGIN, table(folder)))
    main = ROOT / "README.md"
    main.write_text(between(main.read_text(), QUOTED_BEGIN, quoted(folder)))
