"""The child's progress channel: one JSON object a line, each parsed against a schema.

The child runs untrusted code, so every line it writes on the pipe is a claim the parent
checks before it acts on it.  ``parse_line`` turns a line into one of the ``Message`` models
(discriminated by ``event``, extra fields forbidden, numbers finite and bounded, strings and
mappings capped) or raises ``ChannelError``; a reject's ``detail`` over ``MAX_DETAIL_CHARS`` is
cut short instead, as the child's own traceback may run long.  ``encode`` builds lines on the
child's side through the same models, so kbx's child never sends what its parent refuses.
``LineReader`` reads lines from the pipe with a buffer of at most ``MAX_LINE_BYTES``: a child
that writes more without a newline gets ``ChannelError``, not the parent's memory.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import select
import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, TypeAdapter
from pydantic import ValidationError as _ValidationError

# The op evidence's two GPU-time figures, in microseconds: in the candidate's Triton kernels,
# and in all the other work its session ran
TRITON_US, OTHER_US = "kbx::gpu_triton_us", "kbx::gpu_other_us"


MAX_LINE_BYTES = 64 * 1024
MAX_DETAIL_CHARS = 2000
MAX_ERROR_CHARS = 300  # a ChannelError's message: it may quote what the child sent

Index = Annotated[int, Field(ge=0, le=10_000)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=100)]
Count = Annotated[int, Field(ge=0, le=2**63 - 1)]
Seconds = Annotated[float, Field(allow_inf_nan=False)]
Millis = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Kind = Literal["cases", "refill", "bench", "timed"]
FILE_PATTERN = r"^(cases|refill|bench|timed)-\d{1,5}\.safetensors$"


def _cut(value: Any) -> Any:
    """A long detail is cut to ``MAX_DETAIL_CHARS`` (anything else is left to the schema)."""
    if isinstance(value, str) and len(value) > MAX_DETAIL_CHARS:
        return value[: MAX_DETAIL_CHARS - 1] + "…"
    return value


Detail = Annotated[str, BeforeValidator(_cut), StringConstraints(max_length=MAX_DETAIL_CHARS)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


class Timing(_Model):
    """One benchmark case's timing, as ``benchtime.time_bench`` reports it."""

    median_ms: Millis
    ci_low_ms: Millis
    ci_high_ms: Millis
    min_ms: Millis
    reps: Annotated[int, Field(ge=0, le=10**9)]
    profiler_ms: Millis | None = None
    phases_ms: Annotated[dict[Name, Seconds], Field(max_length=16)] | None = None
    fresh_ms: Millis | None = None
    seen_ms: Millis | None = None


class Ready(_Model):
    event: Literal["ready"]
    parts: Annotated[dict[Name, Seconds], Field(max_length=16)]


class Signal(_Model):
    """A step with no fields: imported the candidate, waiting for / got the GPU lock, saving."""

    event: Literal["imported", "wait", "go", "saving"]


class Case(_Model):
    event: Literal["case"]
    kind: Literal["cases", "bench"]
    index: Index


class Output(_Model):
    event: Literal["output"]
    kind: Kind
    index: Index
    file: Annotated[str, StringConstraints(pattern=FILE_PATTERN)]
    sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]  # of the file's bytes
    size: Count  # the file's bytes: a file of another size in its place is not kbx's
    variant: Index | None = None  # which contents a timed output was made from (``benchtime``)


class Ops(_Model):
    event: Literal["ops"]
    kind: Kind
    index: Index
    calls: Annotated[dict[Name, Count], Field(max_length=256)]


class TimingStarted(_Model):
    event: Literal["timing"]
    index: Index


MAX_SAMPLES = 4096  # a case's timed calls (``clock.measure``: 2000 at most)


class Samples(_Model):
    """Every timed call's time of one benchmark case: the parent computes the case's
    statistics from them (``clock.statistics_of``)."""

    event: Literal["samples"]
    index: Index
    ms: Annotated[list[Millis], Field(min_length=1, max_length=MAX_SAMPLES)]


class Rejected(_Model):
    event: Literal["reject"]
    verdict: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    detail: Detail


class HarnessError(_Model):
    event: Literal["harness_error"]
    detail: Detail


class Done(_Model):
    event: Literal["done"]
    timings: Annotated[list[Timing], Field(max_length=64)]
    # wall seconds of parts of the child's stages, as it measured them (``main.run_candidate``):
    # figures for the throughput benchmark, which no verdict reads
    parts: Annotated[dict[Name, Millis], Field(max_length=16)] | None = None


Message = (
    Ready | Signal | Case | Output | Ops | TimingStarted | Samples | Rejected | HarnessError | Done
)
_MESSAGE: TypeAdapter[Message] = TypeAdapter(Annotated[Message, Field(discriminator="event")])


class ChannelError(Exception):
    """What the child wrote is not a message of the contract (one line, safe to show)."""


def one_line(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` escaped to printable ASCII on one line, at most ``limit`` characters."""
    escaped = text.encode("unicode_escape").decode("ascii")
    return escaped if len(escaped) <= limit else escaped[: limit - 3] + "..."


def explain(exc: _ValidationError) -> str:
    """The first violation and where it is (``ready.parts.<key>``, ``done.timings.0.reps``)."""
    first = exc.errors(include_url=False, include_input=False)[0]
    kind, ctx = first["type"], first.get("ctx") or {}
    field = str(ctx.get("discriminator", "")).strip("'")
    what = {
        "json_invalid": f"malformed JSON ({ctx.get('error')})",
        "union_tag_invalid": f"unknown {field} {ctx.get('tag')!r}",
        "union_tag_not_found": f"no {field!r} field",
    }.get(kind, first["msg"])
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {what}" if where else what


def validate(raw: bytes) -> Message:
    """``raw`` JSON against the schema (size not checked here), else ``ChannelError``."""
    try:
        return _MESSAGE.validate_json(raw)
    except _ValidationError as exc:
        raise ChannelError(one_line(f"bad message: {explain(exc)}")) from None


def parse_line(line: bytes) -> Message:
    """One line from the child (its newline optional) as a ``Message``, else ``ChannelError``."""
    line = line.removesuffix(b"\n")
    if len(line) > MAX_LINE_BYTES:
        raise ChannelError(f"message of {len(line)} bytes, over {MAX_LINE_BYTES}")
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ChannelError(f"message is not UTF-8 (byte offset {exc.start})") from None
    return validate(line)


def encode(event: str, **fields: Any) -> bytes:
    """The line (newline included) the child sends for ``event``.  It goes through the parent's
    own parsing, so ``ChannelError`` here stands for a message the parent would refuse; a long
    detail is cut as there, and characters UTF-8 cannot hold (lone surrogates) become '?'."""
    try:
        text = json.dumps({"event": event, **fields}, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ChannelError(one_line(f"cannot encode {event!r}: {exc}")) from None
    message = validate(text.encode("utf-8", "replace"))
    line = _MESSAGE.dump_json(message, exclude_none=True)
    parse_line(line)  # its size
    return line + b"\n"


class LineReader:
    """Lines from the read end of the child's pipe, its buffer never over ``max_line_bytes`` + 1.

    ``next_line(wait_s)`` returns within about ``wait_s`` seconds: the next line (without its
    newline); ``None`` once the pipe is at its end (an unfinished last line is dropped: the
    child died writing it); or raises ``TimeoutError`` when no whole line came in time, so the
    caller can check other things (the child's CPU time) and call again.  A line over the cap
    raises ``ChannelError``, then again on every later call: the stream is broken.  It waits
    with ``poll``, which unlike ``select.select`` takes file descriptors over 1023.
    """

    def __init__(self, fd: int, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self.fd, self.cap = fd, max_line_bytes
        self.buffer = bytearray()
        self.eof = False
        self.error: ChannelError | None = None
        self.poller = select.poll()
        self.poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)

    def next_line(self, wait_s: float) -> bytes | None:
        end = time.monotonic() + max(0.0, wait_s)
        while True:
            line = self.take()
            if line is not None or self.eof:
                return line
            left_ms = max(0, math.ceil((end - time.monotonic()) * 1000))
            if not self.poller.poll(left_ms):
                if time.monotonic() >= end:
                    raise TimeoutError(f"no whole message within {wait_s:.3g} s")
                continue
            self.fill()

    def next_message(self, wait_s: float) -> Message | None:
        """``next_line`` parsed (``parse_line``); ``None`` at the pipe's end."""
        line = self.next_line(wait_s)
        return None if line is None else parse_line(line)

    def take(self) -> bytes | None:
        """The first whole line in the buffer, if there is one."""
        if self.error is not None:
            raise self.error
        end = self.buffer.find(b"\n")
        if end < 0:
            return None
        line = bytes(self.buffer[:end])
        del self.buffer[: end + 1]
        return line

    def fill(self) -> None:
        """Read what the pipe holds, up to one byte past the cap (the buffer holds no newline)."""
        try:
            chunk = os.read(self.fd, self.cap + 1 - len(self.buffer))
        except BlockingIOError:
            return
        if not chunk:
            self.eof = True
            self.buffer.clear()
            return
        self.buffer += chunk
        if b"\n" not in chunk and len(self.buffer) > self.cap:
            self.buffer.clear()
            self.error = ChannelError(f"message over {self.cap} bytes without a newline")
            raise self.error


UNSIGNED = frozenset({"wait", "go"})  # lines the GPU lock sends; they only move a deadline


def sign(line: bytes, key: str, seq: int) -> bytes:
    """``line`` (newline included) with the HMAC of its number in the stream and its bytes."""
    body = line.removesuffix(b"\n")
    mac = hmac.new(key.encode(), f"{seq}:".encode() + body, hashlib.sha256).hexdigest()
    return body + b"\t" + mac.encode() + b"\n"


class Verifier:
    """The parent's side of ``sign``: each signed line must carry the next number's HMAC."""

    def __init__(self, key: str) -> None:
        self.key, self.seq = key, 0

    def open(self, line: bytes) -> Message:
        body, tab, mac = line.rpartition(b"\t")
        if not tab:  # unsigned: only what the lock may say
            message = parse_line(line)
            if message.event not in UNSIGNED:
                raise ChannelError(f"an unsigned {message.event!r} message")
            return message
        want = hmac.new(self.key.encode(), f"{self.seq}:".encode() + body, hashlib.sha256)
        if not hmac.compare_digest(want.hexdigest().encode(), mac):
            raise ChannelError("a message kbx's child did not sign")
        self.seq += 1
        return parse_line(body)
