"""The client against the loopback server: retries, faults recorded with a reason, n > 1
fallback, max-token clamps, the concurrency limit and the cache."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from kbx.generate.cache import Cache
from kbx.generate.client import LLM, Reply
from kbx.generate.config import Sampling
from tests.generate.conftest import client
from tests.generate.server import FakeServer

MESSAGES = [{"role": "user", "content": "write a kernel"}]


def ask(llm: LLM, samples: tuple[int, ...] = (0,), **sampling: object) -> list[Reply]:
    return asyncio.run(llm.chat(MESSAGES, Sampling(**sampling), samples))  # type: ignore[arg-type]


def test_a_429_then_success_is_retried_and_counted(server: FakeServer) -> None:
    server.faults = ["429"]
    (reply,) = ask(LLM(client(server.url), None, None))
    assert reply.error is None and reply.text == "hello"
    assert reply.retries == 1 and len(server.requests) == 2
    assert reply.tokens_in > 0 and reply.tokens_out > 0


def test_500s_past_the_retries_are_recorded_not_raised(server: FakeServer) -> None:
    server.faults = ["500"] * 4
    (reply,) = ask(LLM(client(server.url, retries=2), None, None))
    assert reply.text == "" and reply.retries == 2
    assert reply.error == "HTTP 500 from the server: scripted 500 (after 2 retries)"
    assert len(server.requests) == 3


def test_a_timeout_is_retried(server: FakeServer) -> None:
    server.faults = ["slow"]
    (reply,) = ask(LLM(client(server.url, timeout_s=0.3), None, None))
    assert reply.error is None and reply.text == "hello" and reply.retries == 1


def test_timeouts_past_the_retries_say_so(server: FakeServer) -> None:
    server.faults = ["slow", "slow"]
    (reply,) = ask(LLM(client(server.url, timeout_s=0.3, retries=1), None, None))
    assert reply.error == "the request timed out (after 1 retries)"


def test_truncated_malformed_and_empty_replies_are_retried(server: FakeServer) -> None:
    server.faults = ["truncated", "malformed", "empty"]
    (reply,) = ask(LLM(client(server.url, retries=3), None, None))
    assert reply.error is None and reply.text == "hello" and reply.retries == 3


def test_each_bad_reply_has_a_clear_reason(server: FakeServer) -> None:
    reasons = {}
    for fault in ("truncated", "malformed", "empty", "400"):
        server.faults = [fault]
        (reply,) = ask(LLM(client(server.url, retries=0), None, None))
        reasons[fault] = reply.error
    assert reasons["truncated"] is not None and reasons["truncated"].startswith("connection failed")
    assert reasons["malformed"] is not None and "JSON" in reasons["malformed"]
    assert reasons["empty"] == "Malformed: the server sent no choices (after 0 retries)"
    assert reasons["400"] == "HTTP 400 from the server: scripted 400"


def test_a_reply_cut_at_max_tokens_is_kept_with_its_finish_reason(server: FakeServer) -> None:
    server.finish_reason = "length"
    server.respond = lambda body: "```python\ndef half("
    (reply,) = ask(LLM(client(server.url), None, None))
    assert (reply.text, reply.finish_reason, reply.error) == (
        "```python\ndef half(",
        "length",
        None,
    )
    assert len(server.requests) == 1  # the model's own cut: not retried


def test_n_above_one_falls_back_to_separate_calls(server: FakeServer) -> None:
    server.refuse_n = True
    llm = LLM(client(server.url), None, None)
    replies = ask(llm, (0, 1, 2))
    assert [r.text for r in replies] == ["hello"] * 3 and llm.n_refused
    assert [r.get("n") for r in server.requests] == [3, None, None, None]


def test_n_above_one_in_one_request_when_the_server_takes_it(server: FakeServer) -> None:
    replies = ask(LLM(client(server.url), None, None), (0, 1))
    assert len(replies) == 2 and len(server.requests) == 1
    assert replies[0].tokens_in > 0 and replies[1].tokens_in == 0  # one prompt, counted once


def test_max_tokens_is_clamped_and_the_clamp_recorded(server: FakeServer) -> None:
    (reply,) = ask(LLM(client(server.url, max_tokens_cap=1000), None, None), max_tokens=30_000)
    assert server.requests[0]["max_tokens"] == 1000 and reply.clamped_from == 30_000


def test_concurrency_is_limited(server: FakeServer) -> None:
    server.delay_s = 0.1
    llm = LLM(client(server.url, concurrency=3), None, None)

    async def many() -> list[list[Reply]]:
        return await asyncio.gather(*(llm.chat(MESSAGES, Sampling(seed=i)) for i in range(9)))

    asyncio.run(many())
    assert server.most_in_flight == 3 and llm.most_in_flight == 3


def test_requests_per_minute_are_spaced(server: FakeServer) -> None:
    llm = LLM(client(server.url, requests_per_min=600), None, None)  # one per 0.1 s

    async def many() -> list[list[Reply]]:
        return await asyncio.gather(*(llm.chat(MESSAGES, Sampling(seed=i)) for i in range(5)))

    started = time.monotonic()
    asyncio.run(many())
    assert time.monotonic() - started >= 0.35 and len(server.requests) == 5


def test_the_cache_replays_without_the_server(server: FakeServer, tmp_path: Path) -> None:
    cache = Cache(tmp_path / "c.sqlite")
    first = ask(LLM(client(server.url), None, cache), (0, 1))
    server.stop()
    again = ask(LLM(client(server.url, retries=0), None, Cache(tmp_path / "c.sqlite")), (0, 1))
    assert [r.text for r in again] == [r.text for r in first] and all(r.cached for r in again)
    other = ask(LLM(client(server.url, retries=0), None, Cache(tmp_path / "c.sqlite")), (2,))
    assert other[0].error is not None  # another sample index is another call
