"""A candidate set of ``benchmarks/throughput.py`` through ``kbx serve`` (``--via serve``): the
same rows the engine gets in process, posted to a real server on loopback in its tier, and the
results read from its streams, so that the two rates compare on the same set.

The server (``tests/serve/live.py``) runs on this machine's device with the run's ``--jobs`` and
``--config``, over a state folder of its own (its result cache starts empty: every candidate is
evaluated).  Its own CPU seconds count as the parent's; the children's come from the records.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BATCH = 64  # items a POST, as serve_load's tiers post them
CUT_GRACE_S = 5.0  # a cut set: the jobs still in flight are not waited for


def process_cpu_s(pid: int) -> float:
    """User and system CPU seconds of one process so far (``/proc/<pid>/stat``), 0 if gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_served(
    rows: list[dict[str, Any]], args: Any, work: Path, name: str, end: float | None
) -> tuple[list[dict[str, Any]], dict[str, float], bool]:
    """Post ``rows`` (``variants.candidate_set``'s) to a fresh ``kbx serve`` in ``args.tier``
    and stream their results until all are in or ``end`` (``time.monotonic``) comes: the
    records (each with its row's ``sample``), the times (``began``, ``began_epoch``, ``last``,
    ``closed``), the server's CPU seconds (``parent_s``) and whether ``end`` cut the set."""
    from kbx.client import Client, Retry
    from tests.serve.live import Server

    extra = ["--jobs", str(args.jobs)] if args.jobs else []
    extra += ["--config", str(args.config)] if args.config else []
    server = Server(work / f"{name}-serve", extra, device=args.device)
    server.state.mkdir(parents=True, exist_ok=True)
    server.start(timeout_s=300)
    assert server.proc is not None
    pid = server.proc.pid
    http = Client(server.url, retry=Retry(retries=10, backoff_s=0.25), timeout_s=600)
    records: list[dict[str, Any]] = []
    lock = threading.Lock()
    times = {"began": time.monotonic(), "began_epoch": time.time(), "cpu": process_cpu_s(pid)}
    times["last"] = times["began"]
    items = [{"task_id": r["file"], "code": r["code"]} for r in rows]

    def follow(batch_id: str, samples: dict[str, Any]) -> None:
        for job in http.stream(batch_id):
            record = dict(job["result"], sample=samples.get(job["id"]))
            with lock:
                records.append(record)
                times["last"] = time.monotonic()
                if len(records) % 20 == 0:
                    print(f"  {name} (served): {len(records)} of {len(rows)}", flush=True)

    followers = []
    for i in range(0, len(items), BATCH):
        batch = http.submit(items[i : i + BATCH], tier=args.tier)
        samples = {job_id: r["sample"] for job_id, r in zip(batch["ids"], rows[i:], strict=False)}
        thread = threading.Thread(target=follow, args=(batch["batch_id"], samples), daemon=True)
        thread.start()
        followers.append(thread)
    for thread in followers:
        thread.join(None if end is None else max(0.0, end - time.monotonic()))
    cut = any(thread.is_alive() for thread in followers)
    parent_s = process_cpu_s(pid) - times["cpu"]
    server.stop(wait_s=CUT_GRACE_S if cut else 30.0)
    times["closed"] = time.monotonic()
    with lock:
        return list(records), {**times, "parent_s": parent_s}, cut
