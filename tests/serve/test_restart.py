"""A SIGKILL of kbx serve with jobs queued and in flight, then a restart over the same state:
every accepted job is answered, and answered once."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from kbx.serve.queue import Queue
from tests.serve.live import Server, variant


def states(server: Server, ids: list[str]) -> dict[str, dict]:
    return {i: httpx.get(f"{server.url}/v1/evaluations/{i}", timeout=10).json() for i in ids}


def test_every_accepted_job_completes_exactly_once_after_a_sigkill(tmp_path: Path) -> None:
    server = Server(tmp_path / "state", ["--jobs", "1"]).start()
    ids: list[str] = []
    try:
        for n in range(3):
            items = [
                {"task_id": "Activation/relu", "code": variant(1000 + 2 * n + k)} for k in (0, 1)
            ]
            r = httpx.post(f"{server.url}/v1/evaluations", json={"items": items}, timeout=30)
            ids += r.json()["ids"]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            now = states(server, ids)
            done = [j for j in now.values() if j["state"] == "done"]
            if done and any(j["state"] == "running" for j in now.values()):
                break
            time.sleep(0.1)
        server.kill()
        queue = Queue(tmp_path / "state" / "queue.sqlite")
        before = {i: queue.job(i) or {} for i in ids}  # as the crash left them
        running = [i for i, j in before.items() if j["state"] == "running"]
        assert running and any(j["state"] == "queued" for j in before.values())
        server.start()
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            after = states(server, ids)
            if all(j["state"] == "done" for j in after.values()):
                break
            time.sleep(0.3)
    finally:
        server.stop()
    assert all(j["state"] == "done" and j["result"]["verdict"] == "passed" for j in after.values())
    answers = queue.answers()
    assert {answers[i] for i in ids} == {1}  # every job answered once, none twice
    assert all(after[i]["attempts"] == 2 for i in running)  # requeued and run again
    assert all(
        before[i]["result"] == after[i]["result"] for i in ids if before[i]["state"] == "done"
    )
