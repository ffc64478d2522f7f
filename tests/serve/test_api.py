"""kbx serve over its real HTTP stack on loopback: submit, poll, stream, auth, limits, the
cache, tiers, metrics and the OpenAPI page."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from tests.serve.conftest import TOKEN
from tests.serve.live import NO_TRITON, RELU, Server, variant


def submit(server: Server, auth: dict[str, str], items: list[dict[str, Any]]) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/evaluations", json={"items": items}, headers=auth, timeout=30
    )


def streamed(
    server: Server, auth: dict[str, str], batch_id: str, sse: bool = False
) -> list[dict[str, Any]]:
    headers = {**auth, "Accept": "text/event-stream"} if sse else auth
    url = f"{server.url}/v1/batches/{batch_id}/stream"
    with httpx.stream("GET", url, headers=headers, timeout=300) as r:
        assert r.status_code == 200
        lines = [line for line in r.iter_lines() if line.strip()]
    return [json.loads(line.removeprefix("data: ")) for line in lines]


def test_a_batch_is_accepted_streamed_and_polled(server: Server, auth: dict[str, str]) -> None:
    r = submit(
        server,
        auth,
        [
            {"task_id": "Activation/relu", "code": variant(1), "metadata": {"sample": 3}},
            {"task_id": "Activation/relu", "code": NO_TRITON, "priority": 5},
        ],
    )
    assert r.status_code == 202, r.text
    accepted = r.json()
    assert len(accepted["ids"]) == 2 and accepted["cached"] == [False, False]
    jobs = {job["id"]: job for job in streamed(server, auth, accepted["batch_id"])}
    assert set(jobs) == set(accepted["ids"])
    good, bad = (jobs[i] for i in accepted["ids"])
    assert good["result"]["verdict"] == "passed" and good["metadata"] == {"sample": 3}
    assert good["result"]["sample"] == 3 and good["result"]["tier"] == "quick"
    assert bad["result"]["verdict"] == "no_triton" and "Triton" in bad["result"]["detail"]
    polled = httpx.get(f"{server.url}/v1/evaluations/{accepted['ids'][0]}", headers=auth).json()
    assert polled["state"] == "done" and polled["result"]["verdict"] == "passed"
    assert polled["attempts"] == 1 and polled["latency_s"] > 0
    batch = httpx.get(f"{server.url}/v1/batches/{accepted['batch_id']}", headers=auth).json()
    assert [job["id"] for job in batch] == accepted["ids"]


def test_server_sent_events_carry_the_same_jobs(server: Server, auth: dict[str, str]) -> None:
    accepted = submit(server, auth, [{"task_id": "relu", "code": variant(2)}]).json()
    [job] = streamed(server, auth, accepted["batch_id"], sse=True)
    assert job["id"] == accepted["ids"][0] and job["task_id"] == "Activation/relu"


def test_the_same_candidate_again_is_answered_from_the_cache(
    server: Server, auth: dict[str, str]
) -> None:
    item = {"task_id": "Activation/relu", "code": variant(3)}
    first = submit(server, auth, [item]).json()
    [fresh] = streamed(server, auth, first["batch_id"])
    again = submit(server, auth, [item]).json()
    assert again["cached"] == [True]
    cached = httpx.get(f"{server.url}/v1/evaluations/{again['ids'][0]}", headers=auth).json()
    assert cached["state"] == "done" and cached["cached"] and cached["cached_from"] == fresh["id"]
    assert cached["result"] == fresh["result"]  # its provenance: the job that was evaluated
    other_tier = submit(server, auth, [{**item, "tier": "standard"}]).json()
    assert other_tier["cached"] == [False]  # the tier is part of the content key
    [standard] = streamed(server, auth, other_tier["batch_id"])
    assert standard["result"]["verdict"] == "passed" and standard["result"]["tier"] == "standard"


def test_duplicates_in_one_batch_are_evaluated_once(server: Server, auth: dict[str, str]) -> None:
    item = {"task_id": "Activation/relu", "code": variant(4)}
    accepted = submit(server, auth, [item, item, item]).json()
    jobs = streamed(server, auth, accepted["batch_id"])
    assert len(jobs) == 3 and sum(not job["cached"] for job in jobs) == 1
    assert len({json.dumps(job["result"]) for job in jobs}) == 1


def test_requests_without_a_valid_token_get_401(server: Server) -> None:
    item = [{"task_id": "Activation/relu", "code": RELU}]
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        r = submit(server, headers, item)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert httpx.get(f"{server.url}/v1/tasks").status_code == 401
    assert httpx.get(f"{server.url}/healthz").status_code == 200
    assert TOKEN not in server.log.read_text()


def test_limits_answer_413_422_and_429_with_a_message(server: Server, auth: dict[str, str]) -> None:
    relu = {"task_id": "Activation/relu", "code": RELU}
    big = submit(server, auth, [{**relu, "code": RELU + "#" * 20_000}])
    assert big.status_code == 413 and "items[0].code" in big.json()["detail"]
    many = submit(server, auth, [relu] * 9)
    assert many.status_code == 413 and "at most 8" in many.json()["detail"]
    unknown = submit(server, auth, [relu, {**relu, "task_id": "Math/nope"}])
    assert unknown.status_code == 422 and "items[1].task_id" in unknown.json()["detail"]
    assert submit(server, auth, [{**relu, "tier": "fastest"}]).status_code == 422
    assert submit(server, auth, []).status_code == 422
    full = submit(server, auth, [{**relu, "code": variant(100 + i)} for i in range(7)])
    assert full.status_code == 429 and full.headers["retry-after"].isdigit()
    assert "queue is full" in full.json()["detail"]


def test_tasks_health_metrics_and_the_openapi_page(server: Server, auth: dict[str, str]) -> None:
    tasks = httpx.get(f"{server.url}/v1/tasks", headers=auth).json()
    assert len(tasks) == 184 and {"id", "entry", "version"} <= set(tasks[0])
    health = httpx.get(f"{server.url}/healthz").json()
    assert health["device"] == "cpu" and health["backend"] == "local"
    deadline = time.monotonic() + 60
    while httpx.get(f"{server.url}/healthz").json()["queued"] and time.monotonic() < deadline:
        time.sleep(0.2)
    text = httpx.get(f"{server.url}/metrics").text
    assert "kbx_queue_depth 0.0" in text and "kbx_in_flight" in text
    assert 'kbx_results_total{source="fresh",tier="quick",verdict="passed"}' in text
    assert 'kbx_rejected_requests_total{status="401"}' in text
    assert "kbx_latency_seconds_bucket" in text
    assert httpx.get(f"{server.url}/docs").status_code == 200
    paths = httpx.get(f"{server.url}/openapi.json").json()["paths"]
    assert {"/v1/evaluations", "/v1/evaluations/{job_id}", "/v1/batches/{batch_id}/stream"} <= set(
        paths
    )
