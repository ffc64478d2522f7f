"""A Python client of ``kbx serve`` (httpx), sync (``Client``) and asyncio (``AsyncClient``).

Both retry what a retry can fix: connection errors (the server restarting), 429 (after its
``Retry-After``) and 502-504, with exponential back-off; a 4xx other than 429 is raised at once
as ``ServeError`` with the server's message.  A batch's id is chosen by the client, so a POST
retried after a lost answer gets the same jobs back.  ``evaluate`` submits a batch and returns
its jobs in the order given, once all are done:

    with Client("http://127.0.0.1:8000", token="...") as kbx:
        jobs = kbx.evaluate([("Activation/relu", code)], tier="quick")
        print(jobs[0]["result"]["verdict"])
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import httpx

RETRY_STATUS = (429, 502, 503, 504)
Item = dict[str, Any] | tuple[str, str]  # an item of POST /v1/evaluations, or (task_id, code)
H = TypeVar("H", httpx.Client, httpx.AsyncClient)
Sent = tuple[httpx.Response | None, httpx.TransportError | None]  # a response, or why none came


class ServeError(RuntimeError):
    """The service refused a request; ``status`` is its HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"kbx serve answered {status}: {message}")
        self.status = status


def body(batch: Sequence[Item], tier: str, priority: int) -> dict[str, Any]:
    """A POST's body; ``(task_id, code)`` pairs get ``tier`` and ``priority``."""
    out = []
    for item in batch:
        if isinstance(item, tuple):
            task_id, code = item
            out.append({"task_id": task_id, "code": code, "tier": tier, "priority": priority})
        else:
            out.append({"tier": tier, "priority": priority, **item})
    return {"items": out, "batch_id": uuid.uuid4().hex}


def checked(response: httpx.Response | None) -> Any:
    """The JSON of a successful response; a ``ServeError`` with the server's message else."""
    assert response is not None  # ``Retry.pause_s`` raises the error of a request without one
    if response.status_code >= 400:
        try:
            message = response.json().get("detail", response.text)
        except (json.JSONDecodeError, AttributeError):
            message = response.text
        raise ServeError(response.status_code, str(message))
    return response.json()


@dataclass(frozen=True)
class Retry:
    """``retries`` attempts after the first, ``backoff_s`` doubling between them."""

    retries: int = 5
    backoff_s: float = 0.5

    def pause_s(
        self, attempt: int, response: httpx.Response | None, error: Exception | None = None
    ) -> float | None:
        """Seconds to wait before attempt ``attempt + 1``, or None when ``response`` is the
        answer; the error itself once the attempts are spent."""
        if error is not None and attempt >= self.retries:
            raise error
        if response is not None and (
            response.status_code not in RETRY_STATUS or attempt >= self.retries
        ):
            return None
        if response is not None and response.headers.get("retry-after", "").isdigit():
            return float(response.headers["retry-after"])
        return float(self.backoff_s * 2**attempt)


def fresh(line: str, seen: set[str]) -> dict[str, Any] | None:
    """A streamed job not yielded before (after a reconnect the stream starts over)."""
    job: dict[str, Any] = json.loads(line)
    if job["id"] in seen:
        return None
    seen.add(job["id"])
    return job


def in_order(ids: list[str], jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_id = {job["id"]: job for job in jobs}
    return [by_id[job_id] for job_id in ids]


def settings(url: str, token: str | None, timeout_s: float) -> dict[str, Any]:
    """The httpx client's settings: the base URL, the bearer token, the timeout."""
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    return {"base_url": url, "headers": auth, "timeout": timeout_s}


def stream_path(batch_id: str) -> str:
    return f"/v1/batches/{batch_id}/stream"


class Connection(Generic[H]):
    """``kbx serve`` at ``url``, with bearer ``token``, retrying by ``retry``; ``transport``
    replaces httpx's (a mock in tests)."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        retry: Retry = Retry(),
        timeout_s: float = 60.0,
        transport: Any = None,
    ) -> None:
        self.retry = retry
        self.http: H = self.connect(settings(url, token, timeout_s), transport)

    def connect(self, options: dict[str, Any], transport: Any) -> H:
        raise NotImplementedError


class Client(Connection[httpx.Client]):
    """The synchronous client."""

    def connect(self, options: dict[str, Any], transport: Any) -> httpx.Client:
        return httpx.Client(**options, transport=transport)

    def send(self, method: str, path: str, kwargs: dict[str, Any]) -> Sent:
        try:
            return self.http.request(method, path, **kwargs), None
        except httpx.TransportError as exc:
            return None, exc

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        for attempt in itertools.count():
            response, error = self.send(method, path, kwargs)
            if (pause := self.retry.pause_s(attempt, response, error)) is None:
                return checked(response)
            time.sleep(pause)

    def submit(self, batch: Sequence[Item], tier: str = "quick", priority: int = 0) -> Any:
        """The accepted batch: ``{"batch_id", "ids", "cached"}``."""
        return self.request("POST", "/v1/evaluations", json=body(batch, tier, priority))

    def job(self, job_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self.request("GET", f"/v1/evaluations/{job_id}")
        return found

    def tasks(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.request("GET", "/v1/tasks")
        return found

    def stream(self, batch_id: str) -> Iterator[dict[str, Any]]:
        """The batch's jobs as they finish, each once, reconnecting after a drop."""
        seen: set[str] = set()
        attempt = 0
        while True:
            try:
                with self.http.stream("GET", stream_path(batch_id), timeout=None) as r:
                    if r.status_code >= 400:
                        checked(httpx.Response(r.status_code, content=r.read()))
                    for line in r.iter_lines():
                        if job := fresh(line, seen):
                            yield job
                return
            except (httpx.TransportError, httpx.StreamError) as exc:
                time.sleep(self.retry.pause_s(attempt, None, exc) or 0.0)
                attempt += 1

    def evaluate(
        self, batch: Sequence[Item], tier: str = "quick", priority: int = 0
    ) -> list[dict[str, Any]]:
        """Submit ``batch`` and return its finished jobs in the order given."""
        accepted = self.submit(batch, tier, priority)
        return in_order(accepted["ids"], list(self.stream(accepted["batch_id"])))

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(Connection[httpx.AsyncClient]):
    """``Client`` for asyncio."""

    def connect(self, options: dict[str, Any], transport: Any) -> httpx.AsyncClient:
        return httpx.AsyncClient(**options, transport=transport)

    async def send(self, method: str, path: str, kwargs: dict[str, Any]) -> Sent:
        try:
            return await self.http.request(method, path, **kwargs), None
        except httpx.TransportError as exc:
            return None, exc

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        for attempt in itertools.count():
            response, error = await self.send(method, path, kwargs)
            if (pause := self.retry.pause_s(attempt, response, error)) is None:
                return checked(response)
            await asyncio.sleep(pause)

    async def submit(self, batch: Sequence[Item], tier: str = "quick", priority: int = 0) -> Any:
        return await self.request("POST", "/v1/evaluations", json=body(batch, tier, priority))

    async def job(self, job_id: str) -> dict[str, Any]:
        found: dict[str, Any] = await self.request("GET", f"/v1/evaluations/{job_id}")
        return found

    async def stream(self, batch_id: str) -> AsyncIterator[dict[str, Any]]:
        seen: set[str] = set()
        attempt = 0
        while True:
            try:
                async with self.http.stream("GET", stream_path(batch_id), timeout=None) as r:
                    if r.status_code >= 400:
                        checked(httpx.Response(r.status_code, content=await r.aread()))
                    async for line in r.aiter_lines():
                        if job := fresh(line, seen):
                            yield job
                return
            except (httpx.TransportError, httpx.StreamError) as exc:
                await asyncio.sleep(self.retry.pause_s(attempt, None, exc) or 0.0)
                attempt += 1

    async def evaluate(
        self, batch: Sequence[Item], tier: str = "quick", priority: int = 0
    ) -> list[dict[str, Any]]:
        accepted = await self.submit(batch, tier, priority)
        return in_order(accepted["ids"], [job async for job in self.stream(accepted["batch_id"])])

    async def close(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
