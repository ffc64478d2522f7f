"""The child's progress channel: every message kind, every way a line is refused, the reader."""

import json
import os
import resource
import threading
import time

import pytest

from kbx.sandbox.wire import channel
from kbx.sandbox.wire.channel import (
    MAX_DETAIL_CHARS,
    MAX_LINE_BYTES,
    ChannelError,
    LineReader,
    encode,
    parse_line,
)

SHA = {"sha256": "0123456789abcdef" * 4, "size": 4096}
OUTPUT = {"event": "output", "kind": "cases", "index": 0, "file": "cases-0.safetensors", **SHA}
TIMING = {"median_ms": 1.5, "ci_low_ms": 1.4, "ci_high_ms": 1.6, "min_ms": 1.3, "reps": 40}
FULL_TIMING = dict(TIMING, profiler_ms=1.2, phases_ms={"warm": 3.0}, fresh_ms=1.7, seen_ms=1.5)
VALID = [
    ("ready", {"parts": {"imports": 0.8, "context": 1.1, "inputs": -0.001}}, channel.Ready),
    ("imported", {}, channel.Signal),
    ("case", {"kind": "cases", "index": 0}, channel.Case),
    ("case", {"kind": "bench", "index": 10_000}, channel.Case),
    (
        "output",
        {"kind": "refill", "index": 2, "file": "refill-2.safetensors", **SHA},
        channel.Output,
    ),
    (
        "output",
        {"kind": "timed", "index": 0, "file": "timed-0.safetensors", **SHA, "variant": 1},
        channel.Output,
    ),
    ("ops", {"kind": "timed", "index": 1, "calls": {"aten::add.Tensor": 3}}, channel.Ops),
    ("wait", {}, channel.Signal),
    ("go", {}, channel.Signal),
    ("timing", {"index": 4}, channel.TimingStarted),
    ("reject", {"verdict": "runtime_error", "detail": "boom"}, channel.Rejected),
    ("harness_error", {"detail": "task not found"}, channel.HarnessError),
    ("saving", {}, channel.Signal),
    ("done", {"timings": [TIMING, FULL_TIMING]}, channel.Done),
    ("done", {"timings": []}, channel.Done),
    ("done", {"timings": [], "parts": {"compile": 2.5, "evidence": 0.0}}, channel.Done),
]


def line(obj: object) -> bytes:
    return json.dumps(obj).encode()


@pytest.mark.parametrize(("event", "fields", "model"), VALID)
def test_every_message_kind_parses_and_encodes(event, fields, model):
    msg = parse_line(line({"event": event, **fields}))
    assert isinstance(msg, model) and msg.event == event
    encoded = encode(event, **fields)
    assert encoded.endswith(b"\n") and encoded.count(b"\n") == 1
    assert parse_line(encoded) == msg


def test_done_keeps_every_timing_field():
    (timing,) = parse_line(line({"event": "done", "timings": [FULL_TIMING]})).timings
    assert timing.model_dump() == FULL_TIMING
    (bare,) = parse_line(line({"event": "done", "timings": [TIMING]})).timings
    assert bare.profiler_ms is None and bare.phases_ms is None


def too_many(n: int, value: object) -> dict[str, object]:
    return {f"k{i}": value for i in range(n)}


REFUSED = [
    (b"{not json", "malformed JSON"),
    (b"", "malformed JSON"),
    (b'{"event": "ready", "parts": {}}\x00', "malformed JSON"),
    (b'{"event": "harness_error", "detail": "caf\xe9"}', "not UTF-8"),
    (b'["ready"]', "Input should be an object"),
    (b"null", "Input should be an object"),
    (b"{}", "no 'event' field"),
    (b'{"event": "launch"}', "unknown event 'launch'"),
    (b'{"event": 7}', "unknown event"),
    (b'{"event": "wait", "x": 1}', "wait.x: Extra inputs are not permitted"),
    (line({"event": "case", "kind": "cases"}), "case.index: Field required"),
    (line({"event": "case", "kind": "cases", "index": True}), "valid integer"),
    (line({"event": "case", "kind": "cases", "index": 1.0}), "valid integer"),
    (line({"event": "case", "kind": "cases", "index": "1"}), "valid integer"),
    (line({"event": "case", "kind": "cases", "index": -1}), "greater than or equal to 0"),
    (line({"event": "case", "kind": "cases", "index": 10_001}), "less than or equal"),
    (line({"event": "case", "kind": "refill", "index": 0}), "case.kind"),
    (line({"event": "timing", "index": 2**70}), "less than or equal"),
    (b'{"event": "ready", "parts": {"a": NaN}}', "finite number"),
    (b'{"event": "ready", "parts": {"a": Infinity}}', "finite number"),
    (line({"event": "ready", "parts": {"a": "1"}}), "valid number"),
    (line({"event": "ready", "parts": too_many(17, 1.0)}), "at most 16"),
    (line({"event": "ready", "parts": {"": 1.0}}), "at least 1 character"),
    (line({"event": "ops", "kind": "cases", "index": 0, "calls": too_many(257, 1)}), "at most 256"),
    (line({"event": "ops", "kind": "cases", "index": 0, "calls": {"x" * 101: 1}}), "at most 100"),
    (line({"event": "ops", "kind": "cases", "index": 0, "calls": {"a": -1}}), "greater than"),
    (line({"event": "reject", "verdict": "", "detail": ""}), "at least 1 character"),
    (line({"event": "reject", "verdict": "v" * 65, "detail": ""}), "at most 64"),
    (line({"event": "reject", "verdict": "crashed", "detail": None}), "valid string"),
    (line({"event": "harness_error"}), "harness_error.detail: Field required"),
    (line(dict(OUTPUT, sha256="AB" * 32)), "output.sha256: String should match pattern"),
    (line(dict(OUTPUT, sha256="ab" * 31)), "output.sha256"),
    (line({k: v for k, v in OUTPUT.items() if k != "sha256"}), "output.sha256: Field required"),
    (line(dict(OUTPUT, variant=-1)), "output.variant"),
    (line(dict(OUTPUT, variant="1")), "output.variant"),
    (line({"event": "done", "timings": [TIMING] * 65}), "at most 64"),
    (line({"event": "done", "timings": [dict(TIMING, median_ms=-1.0)]}), "greater than"),
    (line({"event": "done", "timings": [dict(TIMING, extra=1)]}), "Extra inputs"),
    (b'{"event": "done", "timings": [{"median_ms": NaN}]}', "finite number"),
    (line({"event": "done", "timings": [dict(TIMING, phases_ms={"a": None})]}), "valid number"),
    (line({"event": "done", "timings": {"0": TIMING}}), "valid array"),
    (line({"event": "done", "timings": [], "parts": {"compile": -1.0}}), "greater than"),
    (line({"event": "done", "timings": [], "parts": too_many(17, 1.0)}), "at most 16"),
]


@pytest.mark.parametrize(("raw", "reason"), REFUSED)
def test_refused_lines_say_why_on_one_line(raw, reason):
    with pytest.raises(ChannelError) as info:
        parse_line(raw)
    text = str(info.value)
    assert reason in text and "\n" not in text and len(text) <= channel.MAX_ERROR_CHARS


@pytest.mark.parametrize(
    "name",
    [
        "cases-0.pt",
        "../cases-0.safetensors",
        "dir/cases-0.safetensors",
        "Cases-0.safetensors",
        "cases-123456.safetensors",
        "cases-0.safetensors\n",
        "other-0.safetensors",
        "",
    ],
)
def test_output_file_must_be_a_bare_name(name):
    with pytest.raises(ChannelError, match="output.file"):
        parse_line(line(dict(OUTPUT, file=name)))


def test_over_long_line_is_refused_before_parsing():
    raw = line({"event": "harness_error", "detail": "x" * MAX_LINE_BYTES})
    with pytest.raises(ChannelError, match=f"over {MAX_LINE_BYTES}"):
        parse_line(raw)
    assert parse_line(line({"event": "go"}) + b"\n").event == "go"  # one newline is fine


def test_long_detail_is_cut_not_refused():
    msg = parse_line(line({"event": "reject", "verdict": "crashed", "detail": "y" * 50_000}))
    assert isinstance(msg, channel.Rejected)
    assert len(msg.detail) == MAX_DETAIL_CHARS and msg.detail.endswith("…")
    sent = parse_line(encode("harness_error", detail="z" * 200_000))  # fits a line once cut
    assert isinstance(sent, channel.HarnessError) and len(sent.detail) == MAX_DETAIL_CHARS


def test_error_message_escapes_what_the_child_wrote():
    raw = line({"event": "ready", "parts": {"a\nb\u202e": "x"}})
    with pytest.raises(ChannelError) as info:
        parse_line(raw)
    assert "\n" not in str(info.value) and str(info.value).isascii()


def test_encode_takes_verdict_enums_and_replaces_lone_surrogates():
    from kbx.suite.verdict import Verdict

    msg = parse_line(encode("reject", verdict=Verdict.CRASHED, detail="bad \ud800 byte"))
    assert isinstance(msg, channel.Rejected)
    assert msg.verdict == "crashed" and msg.detail == "bad ? byte"


@pytest.mark.parametrize(
    ("event", "fields", "reason"),
    [
        ("ready", {"parts": {"a": float("nan")}}, "Out of range float"),
        ("ready", {"parts": {"a": object()}}, "not JSON serializable"),
        ("launch", {}, "unknown event"),
        ("case", {"kind": "cases", "index": 0, "extra": 1}, "Extra inputs"),
        ("output", {"kind": "cases", "index": 0, "file": "/etc/passwd", **SHA}, "output.file"),
        ("ops", {"kind": "cases", "index": 0, "calls": {f"op{i}": 1 for i in range(257)}}, "256"),
    ],
)
def test_encode_refuses_what_the_parent_would(event, fields, reason):
    with pytest.raises(ChannelError, match=reason):
        encode(event, **fields)


def test_encode_refuses_a_line_over_the_cap():
    calls = {f"{'o' * 90}{i}": 2**62 for i in range(256)}  # the largest ops message fits
    assert len(encode("ops", kind="cases", index=0, calls=calls)) < MAX_LINE_BYTES
    parts = {f"{'p' * 97}{i}": 1.0 for i in range(16)}  # but 64 such timings do not
    timing = dict(TIMING, phases_ms=parts)
    with pytest.raises(ChannelError, match="over"):
        encode("done", timings=[timing] * 64)


# ---- LineReader over a real pipe ----


class Pipe:
    """A pipe whose ends the test may close early (each is closed once)."""

    def __init__(self) -> None:
        self.r, self.w = os.pipe()
        self.open = {self.r, self.w}

    def close(self, fd: int) -> None:
        if fd in self.open:
            self.open.discard(fd)
            os.close(fd)


@pytest.fixture
def pipe():
    p = Pipe()
    yield p
    for fd in list(p.open):
        p.close(fd)


def test_reader_splits_lines_across_and_within_chunks(pipe):
    r, w = pipe.r, pipe.w
    reader = LineReader(r)
    os.write(w, b'{"event": "wa')
    with pytest.raises(TimeoutError):
        reader.next_line(0.05)
    os.write(w, b'it"}\n{"event": "go"}\n{"event": "sav')
    assert reader.next_line(1) == b'{"event": "wait"}'
    assert reader.next_message(1) == channel.Signal(event="go")
    os.write(w, b'ing"}\n')
    pipe.close(w)
    assert reader.next_message(1) == channel.Signal(event="saving")
    assert reader.next_line(1) is None
    assert reader.next_line(1) is None  # stays at the end


def test_reader_drops_an_unfinished_last_line_at_the_end(pipe):
    r, w = pipe.r, pipe.w
    os.write(w, b'{"event": "go"}\n{"event": "do')
    pipe.close(w)
    reader = LineReader(r)
    assert reader.next_line(1) == b'{"event": "go"}'
    assert reader.next_line(1) is None


def test_reader_times_out_after_the_wait_and_can_be_called_again(pipe):
    r, w = pipe.r, pipe.w
    reader = LineReader(r)
    began = time.monotonic()
    with pytest.raises(TimeoutError):
        reader.next_line(0.2)
    assert 0.19 <= time.monotonic() - began < 1.0
    with pytest.raises(TimeoutError):
        reader.next_line(0)  # a poll
    threading.Timer(0.1, os.write, (w, b'{"event": "go"}\n')).start()
    assert reader.next_line(2) == b'{"event": "go"}'


def test_reader_refuses_a_line_over_the_cap_and_stays_broken(pipe):
    r, w = pipe.r, pipe.w
    reader = LineReader(r, max_line_bytes=100)
    os.write(w, b"x" * 100 + b"\n")  # exactly the cap: fine
    assert reader.next_line(1) == b"x" * 100
    os.write(w, b"y" * 150)
    with pytest.raises(ChannelError, match="over 100 bytes"):
        reader.next_line(1)
    assert len(reader.buffer) == 0
    os.write(w, b"\n" + line({"event": "go"}) + b"\n")
    with pytest.raises(ChannelError):
        reader.next_line(1)


def test_reader_bounds_its_buffer_against_a_flood(pipe):
    r, w = pipe.r, pipe.w
    reader = LineReader(r)
    writer = threading.Thread(target=lambda: os.write(w, b"z" * (8 * MAX_LINE_BYTES)))
    writer.start()
    with pytest.raises(ChannelError):
        reader.next_line(5)
    assert len(reader.buffer) <= MAX_LINE_BYTES + 1
    pipe.close(r)  # the writer, blocked on a full pipe, gets EPIPE
    writer.join(5)


def test_reader_takes_descriptors_over_1023(pipe):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    most = 4096 if hard == resource.RLIM_INFINITY else hard
    if most <= 1500:
        pytest.skip("this process may not open descriptors over 1500")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(4096, most)), hard))
    high = os.dup2(pipe.r, 1500)
    try:
        os.write(pipe.w, b'{"event": "go"}\n')
        assert LineReader(high).next_line(1) == b'{"event": "go"}'
    finally:
        os.close(high)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
