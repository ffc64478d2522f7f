"""The one LLM client: chat completions from any OpenAI-compatible server, through ``openai``.

``LLM.chat`` returns one ``Reply`` per sample index and never raises for a server's fault: a
call that still fails after its retries (429, 5xx, timeouts, dropped connections, replies that
are malformed or hold no choices) comes back with ``error`` saying why.  ``n > 1`` is asked in
one request first and falls back to separate calls when the server refuses it or sends fewer
choices.  ``max_tokens`` above the server's cap is clamped and the clamp is recorded.  Replies
come from and go to the ``Cache`` when there is one.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import openai
from aiolimiter import AsyncLimiter

from kbx.generate.cache import Cache, digest
from kbx.generate.config import ClientConfig, Sampling

Messages = list[dict[str, str]]
RETRIED_STATUS = frozenset({408, 409, 429})  # and every 5xx
RETRIED = (
    openai.APITimeoutError,
    openai.APIConnectionError,
    openai.APIResponseValidationError,
    json.JSONDecodeError,  # a 200 whose body is not JSON
)


class Malformed(Exception):
    """A 200 reply kbx cannot use (no choices, not a completion): retried like a 5xx."""


@dataclass
class Reply:
    text: str
    finish_reason: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    retries: int = 0
    cached: bool = False
    error: str | None = None
    clamped_from: int | None = None
    estimated_tokens: bool = False

    def stored(self) -> dict[str, Any]:
        """What the cache keeps: the reply itself, not how this run got it."""
        keep = ("text", "finish_reason", "tokens_in", "tokens_out", "estimated_tokens")
        return {k: v for k, v in asdict(self).items() if k in keep}


class LLM:
    """Chat completions for one model at one endpoint, limited by ``cfg``."""

    def __init__(self, cfg: ClientConfig, api_key: str | None, cache: Cache | None) -> None:
        self.cfg = cfg
        self.api_key = api_key or "EMPTY"  # local servers (vLLM, SGLang) take any key
        self.cache = cache
        self.api: openai.AsyncOpenAI | None = None
        self.slots: asyncio.Semaphore | None = None
        rpm = cfg.requests_per_min  # spaced evenly, no burst: a server's per-second limit holds too
        self.requests = AsyncLimiter(1, 60 / rpm) if rpm else None
        self.tokens = AsyncLimiter(cfg.tokens_per_min, 60) if cfg.tokens_per_min else None
        self.n_refused = not cfg.multi_n
        self.in_flight = 0
        self.most_in_flight = 0

    def client(self) -> openai.AsyncOpenAI:
        if self.api is None:  # made in the running loop; its pool (1,000) exceeds ``slots``
            self.api = openai.AsyncOpenAI(
                api_key=self.api_key,
                base_url=self.cfg.base_url,
                max_retries=0,  # kbx retries, to count and configure them
                timeout=self.cfg.timeout_s,
            )
            self.slots = asyncio.Semaphore(self.cfg.concurrency)
        return self.api

    async def close(self) -> None:
        if self.api is not None:
            await self.api.close()
            self.api = None

    def params(self, sampling: Sampling) -> tuple[dict[str, Any], int | None]:
        """The request's sampling parameters, and the asked max_tokens when it was clamped."""
        cap = self.cfg.max_tokens_cap
        max_tokens = min(sampling.max_tokens, cap) if cap else sampling.max_tokens
        params: dict[str, Any] = {"temperature": sampling.temperature, "max_tokens": max_tokens}
        if sampling.top_p is not None:
            params["top_p"] = sampling.top_p
        if sampling.seed is not None:
            params["seed"] = sampling.seed
        return params, sampling.max_tokens if max_tokens < sampling.max_tokens else None

    def key(self, messages: Messages, params: dict[str, Any], sample: int) -> str:
        return digest({"model": self.cfg.model, "messages": messages, **params, "sample": sample})

    async def chat(
        self, messages: Messages, sampling: Sampling, samples: Sequence[int] = (0,)
    ) -> list[Reply]:
        """One reply per sample index, in order: cached ones replayed, the rest requested."""
        params, clamped_from = self.params(sampling)
        keys = {i: self.key(messages, params, i) for i in samples}
        replies: dict[int, Reply] = {}
        for i, key in keys.items():
            if self.cache and (hit := self.cache.reply(key)):
                replies[i] = Reply(**hit, cached=True, clamped_from=clamped_from)
        missing = [i for i in samples if i not in replies]
        fresh = await self.fetch(messages, params, missing)
        for i, reply in zip(missing, fresh, strict=True):
            reply.clamped_from = clamped_from
            if self.cache and reply.error is None:
                self.cache.put_reply(keys[i], {"messages": messages, **params}, reply.stored())
            replies[i] = reply
        return [replies[i] for i in samples]

    async def fetch(
        self, messages: Messages, params: dict[str, Any], wanted: list[int]
    ) -> list[Reply]:
        if len(wanted) > 1 and not self.n_refused:
            together = await self.call(messages, params, len(wanted))
            if together is not None:
                return together
            self.n_refused = True
        singles = [self.call(messages, self.seeded(params, i), 1) for i in wanted]
        return [r[0] if r else Reply("", error="refused") for r in await asyncio.gather(*singles)]

    @staticmethod
    def seeded(params: dict[str, Any], sample: int) -> dict[str, Any]:
        """Separate calls for n > 1 differ by seed when a seed is set, else by sampling."""
        return {**params, "seed": params["seed"] + sample} if "seed" in params else params

    async def call(self, messages: Messages, params: dict[str, Any], n: int) -> list[Reply] | None:
        """``n`` replies of one request, retried with backoff; None: the server refused n > 1."""
        started, retries = time.perf_counter(), 0
        while True:
            try:
                return await self.request(messages, params, n, started, retries)
            except openai.BadRequestError as exc:
                if n > 1:
                    return None
                reason = describe(exc)
                break
            except openai.APIStatusError as exc:
                reason = describe(exc)
                if exc.status_code < 500 and exc.status_code not in RETRIED_STATUS:
                    break
            except (*RETRIED, Malformed) as exc:
                reason = describe(exc)
            if retries >= self.cfg.retries:
                reason = f"{reason} (after {retries} retries)"
                break
            await asyncio.sleep(self.backoff_s(retries))
            retries += 1
        latency = time.perf_counter() - started
        return [Reply("", error=reason, retries=retries, latency_s=latency) for _ in range(n)]

    def backoff_s(self, retry: int) -> float:
        return float(min(self.cfg.backoff_max_s, self.cfg.backoff_min_s * 2**retry))

    async def request(
        self, messages: Messages, params: dict[str, Any], n: int, started: float, retries: int
    ) -> list[Reply]:
        api = self.client()
        assert self.slots is not None
        await self.limit(messages, params["max_tokens"] * n)
        async with self.slots:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            try:
                extra = {"n": n} if n > 1 else {}
                create: Any = api.chat.completions.create  # params are built at run time
                response = await create(model=self.cfg.model, messages=messages, **params, **extra)
            finally:
                self.in_flight -= 1
        return replies_of(response, n, messages, time.perf_counter() - started, retries)

    async def limit(self, messages: Messages, max_out: int) -> None:
        if self.requests:
            await self.requests.acquire()
        if self.tokens:
            wanted = estimate_tokens(json.dumps(messages)) + max_out
            await self.tokens.acquire(min(wanted, self.tokens.max_rate))


def replies_of(
    response: Any, n: int, messages: Messages, latency_s: float, retries: int
) -> list[Reply]:
    """The replies of a completion; Malformed when it holds no usable choices."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise Malformed("the server sent no choices")
    if len(choices) < n:
        raise Malformed(f"asked for {n} choices, the server sent {len(choices)}")
    usage = getattr(response, "usage", None)
    texts = [(c.message.content or "") if c.message else "" for c in choices[:n]]
    estimated = usage is None
    tokens_in = usage.prompt_tokens if usage else estimate_tokens(json.dumps(messages))
    out_total = usage.completion_tokens if usage else sum(estimate_tokens(t) for t in texts)
    share, rest = divmod(out_total, n)
    return [
        Reply(
            text=text,
            finish_reason=choice.finish_reason,
            tokens_in=tokens_in if i == 0 else 0,  # one prompt, counted once
            tokens_out=share + (rest if i == 0 else 0),
            latency_s=latency_s,
            retries=retries,
            estimated_tokens=estimated,
        )
        for i, (text, choice) in enumerate(zip(texts, choices, strict=False))
    ]


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def describe(exc: Exception) -> str:
    """One line naming what went wrong with a request."""
    if isinstance(exc, openai.APIStatusError):
        message = re.sub(r"^Error code: \d+ - ", "", str(exc.message))
        return f"HTTP {exc.status_code} from the server: {message[:200]}"
    if isinstance(exc, openai.APITimeoutError):
        return "the request timed out"
    if isinstance(exc, openai.APIConnectionError):
        return f"connection failed: {root_cause(exc)[:200]}"
    if isinstance(exc, json.JSONDecodeError):
        return f"the reply is not JSON ({exc.msg})"
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def root_cause(exc: BaseException) -> str:
    """The deepest cause of a failed connection, as a person reads it (``Connection refused``,
    not httpx's ``All connection attempts failed``)."""
    seen: BaseException = exc
    while (deeper := seen.__cause__ or seen.__context__) is not None:
        seen = deeper
    if isinstance(seen, OSError) and seen.errno:
        return os.strerror(seen.errno)
    return str(seen) or type(seen).__name__
