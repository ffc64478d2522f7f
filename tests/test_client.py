"""kbx.client: its retries (on a mock transport) and a round trip, sync and async, against a
live ``kbx serve --device cpu``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from kbx.client import AsyncClient, Client, Retry, ServeError
from tests.serve.live import NO_TRITON, Server, variant


def flaky(statuses: list[int]) -> tuple[httpx.MockTransport, list[int]]:
    """A transport answering ``statuses`` in turn (then 200), recording each call."""
    calls: list[int] = []

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        status = statuses[len(calls) - 1] if len(calls) <= len(statuses) else 200
        if status == 0:
            raise httpx.ConnectError("refused", request=request)
        headers = {"Retry-After": "0"} if status == 429 else {}
        return httpx.Response(status, json={"detail": f"status {status}", "ok": 1}, headers=headers)

    return httpx.MockTransport(handle), calls


def test_retries_on_429_5xx_and_connection_errors_then_succeeds() -> None:
    transport, calls = flaky([0, 429, 503])
    with Client("http://kbx", retry=Retry(3, 0.001), transport=transport) as client:
        assert client.request("GET", "/healthz") == {"detail": "status 200", "ok": 1}
    assert len(calls) == 4


def test_client_errors_are_raised_at_once_and_retries_end() -> None:
    transport, calls = flaky([413])
    client = Client("http://kbx", retry=Retry(3), transport=transport)
    with pytest.raises(ServeError, match="413: status 413"):
        client.request("POST", "/v1/evaluations")
    assert len(calls) == 1
    transport, calls = flaky([503] * 10)
    client = Client("http://kbx", retry=Retry(2, 0.001), transport=transport)
    with pytest.raises(ServeError, match="503"):
        client.request("GET", "/healthz")
    assert len(calls) == 3


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server(tmp_path_factory.mktemp("client") / "state").start()
    yield server
    server.stop()


def test_sync_and_async_round_trips(live: Server) -> None:
    batch = [("Activation/relu", variant(7)), ("Activation/relu", NO_TRITON)]
    with Client(live.url) as client:
        jobs = client.evaluate(batch)
        assert [j["result"]["verdict"] for j in jobs] == ["passed", "no_triton"]
        assert client.job(jobs[0]["id"])["state"] == "done"

    async def again() -> list[dict]:
        async with AsyncClient(live.url) as client:
            return await client.evaluate(batch)

    cached = asyncio.run(again())
    assert [j["cached"] for j in cached] == [True, True]
    assert [j["cached_from"] for j in cached] == [j["id"] for j in jobs]


def test_a_retried_post_with_the_same_batch_id_queues_nothing_twice(live: Server) -> None:
    body = {"items": [{"task_id": "Activation/relu", "code": variant(8)}], "batch_id": "retry-0001"}
    first = httpx.post(f"{live.url}/v1/evaluations", json=body).json()
    second = httpx.post(f"{live.url}/v1/evaluations", json=body).json()
    assert first["ids"] == second["ids"] and first["batch_id"] == "retry-0001"
