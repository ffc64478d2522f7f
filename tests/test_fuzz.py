"""Fuzzing what kbx reads from outside: the child's messages and output files, submissions, and
the results store.  Each property holds for every generated input, never just the usual ones:
a reader returns a valid value or its own documented error, and nothing else."""

from __future__ import annotations

import itertools
import json
import math
import os
import shutil
import struct
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kbx.core.candidate import Candidate, read_source
from kbx.core.result import CaseTiming, Result
from kbx.run.store import Store, export
from kbx.sandbox.wire import channel, outtree
from kbx.sandbox.wire.channel import ChannelError, LineReader, parse_line
from kbx.sandbox.wire.outputs import OutputError, read_case, write_case
from kbx.suite import find, load_suite
from kbx.suite.tensors import Unstored
from kbx.suite.verdict import Verdict

FUZZ = settings(
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
LEAF = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=20)
    | st.sampled_from(["cases", "bench", "refill", "timed", "crashed", "cases-0.safetensors"]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


# thousands of files and folders made and removed: in memory where there is /dev/shm (on the
# disk of a test machine, removing folders alone took 9 ms each)
SHM = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


def scratch_dir() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="kbx-fuzz-", dir=SHM)


@pytest.fixture(scope="module")
def scratch():
    with scratch_dir() as tmp:
        yield Path(tmp)


# ---- a) the child's messages ----

SHA = "f" * 64
TIMING = {"median_ms": 1.0, "ci_low_ms": 0.9, "ci_high_ms": 1.1, "min_ms": 0.8, "reps": 10}
VALID_MESSAGES = [
    {"event": "ready", "parts": {"imports": 0.5, "inputs": 0.1}},
    {"event": "imported"},
    {"event": "case", "kind": "cases", "index": 3},
    {
        "event": "output",
        "kind": "bench",
        "index": 1,
        "file": "bench-1.safetensors",
        "sha256": SHA,
        "size": 64,
    },
    {
        "event": "output",
        "kind": "timed",
        "index": 0,
        "file": "timed-0.safetensors",
        "sha256": SHA,
        "size": 64,
        "variant": 2,
    },
    {"event": "ops", "kind": "cases", "index": 0, "calls": {"aten::mm": 2, "aten::add": 1}},
    {"event": "wait"},
    {"event": "go"},
    {"event": "timing", "index": 0},
    {"event": "reject", "verdict": "crashed", "detail": "segfault"},
    {"event": "harness_error", "detail": "no task"},
    {"event": "saving"},
    {"event": "done", "timings": [dict(TIMING, phases_ms={"a": 1.0}, fresh_ms=None)]},
]


def check_message(raw: bytes) -> None:
    try:
        msg = parse_line(raw)
    except ChannelError as exc:
        assert "\n" not in str(exc) and len(str(exc)) <= channel.MAX_ERROR_CHARS
        return
    assert isinstance(msg, channel.Message)
    again = channel.encode(**msg.model_dump(exclude_none=True))  # what parses also encodes
    assert parse_line(again) == msg


@FUZZ
@given(st.binary(max_size=300))
def test_parse_line_on_arbitrary_bytes(raw):
    check_message(raw)


@st.composite
def mutated_messages(draw: st.DrawFn) -> bytes:
    """A valid message with a field replaced, added or removed, or its bytes edited."""
    obj = json.loads(json.dumps(draw(st.sampled_from(VALID_MESSAGES))))
    how = draw(st.sampled_from(["replace", "add", "remove", "nest", "bytes"]))
    target = obj
    if how == "nest" and obj["event"] == "done":
        target = obj["timings"][0]
    keys = sorted(target)
    if how in ("replace", "nest"):
        target[draw(st.sampled_from(keys))] = draw(JSON)
    elif how == "add":
        target[draw(st.text(max_size=10))] = draw(JSON)
    elif how == "remove":
        del target[draw(st.sampled_from(keys))]
    raw = bytearray(json.dumps(obj, allow_nan=True).encode())
    if how == "bytes":
        for _ in range(draw(st.integers(1, 4))):
            at = draw(st.integers(0, len(raw)))
            raw[at : at + draw(st.integers(0, 3))] = draw(st.binary(max_size=3))
    return bytes(raw)


@FUZZ
@given(mutated_messages())
def test_parse_line_on_mutated_messages(raw):
    check_message(raw)


# ---- b) the reader of the child's pipe ----

CHUNK = st.one_of(
    st.binary(max_size=120),
    st.builds(
        lambda piece, n: piece * n,
        st.sampled_from([b"x", b"\n", b'{"event": "go"}\n', b"ab\ncd"]),
        st.integers(1, 400),
    ),
    st.just(b"y" * 200_000),  # far over any cap, no newline: more than a pipe holds
)


def expected_lines(stream: bytes, cap: int) -> tuple[list[bytes], bool]:
    """What the reader must return, and whether it must end in ChannelError."""
    lines, pos = [], 0
    while (end := stream.find(b"\n", pos)) >= 0:
        if end - pos > cap:
            return lines, True
        lines.append(stream[pos:end])
        pos = end + 1
    return lines, len(stream) - pos > cap


def feed(fd: int, chunks: list[bytes]) -> None:
    try:
        for chunk in chunks:
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
    except OSError:  # the reader gave up and closed its end
        pass
    finally:
        os.close(fd)


def read_all(reader: LineReader, cap: int) -> tuple[list[bytes], bool]:
    lines: list[bytes] = []
    for _ in range(10_000):
        try:
            line = reader.next_line(5.0)
        except TimeoutError:
            continue
        except ChannelError:
            return lines, True
        finally:
            assert len(reader.buffer) <= cap + 1  # a longest line and its newline
        if line is None:
            return lines, False
        lines.append(line)
    raise AssertionError("the reader never came to an end")


@FUZZ
@given(st.lists(CHUNK, max_size=12), st.integers(1, 300) | st.just(channel.MAX_LINE_BYTES))
def test_line_reader_over_a_real_pipe(chunks, cap):
    r, w = os.pipe()
    writer = threading.Thread(target=feed, args=(w, chunks))
    writer.start()
    try:
        got = read_all(LineReader(r, cap), cap)
    finally:
        os.close(r)
        writer.join(10)
    assert got == expected_lines(b"".join(chunks), cap)


# ---- c) the child's output files ----

DTYPES = sorted(outtree.DTYPES | set(outtree.COMPLEX), key=str)


@st.composite
def tensors(draw: st.DrawFn) -> torch.Tensor:
    """Any bits (NaN payloads, -0.0, subnormals) of any dtype kbx stores, any small shape."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.lists(st.integers(0, 3), max_size=3))
    size = math.prod(shape) * dtype.itemsize
    raw = bytearray(draw(st.binary(min_size=size, max_size=size)))
    flat = torch.frombuffer(raw, dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
    t = (flat % 2 == 1) if dtype == torch.bool else flat.view(dtype)
    t = t.reshape(shape)
    if t.dim() >= 2 and draw(st.booleans()):
        t = t.transpose(0, 1)  # not contiguous
    return t


SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.complex_numbers(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
)
OUTPUT = st.recursive(
    SCALARS | tensors(),
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple),
    max_leaves=8,
)
RUNS = st.lists(OUTPUT, max_size=outtree.MAX_RUNS)


def check_runs(runs: list[Any]) -> None:
    """Only what a file ``write_case`` wrote can hold, and on the CPU."""
    assert isinstance(runs, list) and len(runs) <= outtree.MAX_RUNS
    stack: list[tuple[Any, int]] = [(run, 1) for run in runs]
    while stack:
        x, depth = stack.pop()
        assert depth <= outtree.MAX_DEPTH
        if isinstance(x, tuple | list):
            stack.extend((v, depth + 1) for v in x)
        elif isinstance(x, torch.Tensor):
            assert type(x) is torch.Tensor and x.device.type == "cpu"
            assert x.dtype in outtree.DTYPES or x.dtype in outtree.COMPLEX
        else:
            assert x is None or type(x) in (bool, int, float, complex, str, Unstored)


def try_read(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    try:
        runs = read_case(path, 1 << 20)
    except OutputError as exc:
        assert str(exc).startswith(path.name) and "\n" not in str(exc)
        return
    check_runs(runs)


@FUZZ
@given(st.binary(max_size=400))
def test_read_case_on_arbitrary_bytes(scratch, data):
    try_read(scratch / "cases-0.safetensors", data)


@FUZZ
@given(RUNS, st.data())
def test_read_case_on_mutated_files(scratch, runs, data):
    name = write_case(scratch, "cases", 1, runs)
    raw = bytearray((scratch / name).read_bytes())
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(raw)))
        if data.draw(st.booleans()):
            raw[at : at + data.draw(st.integers(0, 8))] = data.draw(st.binary(max_size=8))
        else:
            del raw[at:]
    try_read(scratch / "cases-2.safetensors", bytes(raw))


def same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):

        def bits(t: torch.Tensor) -> torch.Tensor:
            t = torch.view_as_real(t) if t.is_complex() else t
            return t.contiguous().reshape(-1).view(torch.uint8)

        return (a.dtype, a.shape) == (b.dtype, b.shape) and torch.equal(bits(a), bits(b))
    if isinstance(a, tuple | list):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return type(a) is type(b) and repr(a) == repr(b)


@FUZZ
@given(RUNS)
def test_write_case_round_trips(scratch, runs):
    back = read_case(scratch / write_case(scratch, "refill", 0, runs), 1 << 20)
    assert same(runs, back)


TREES = st.recursive(
    st.fixed_dictionaries(
        {"t": st.sampled_from(["tensor", "none", "bool", "int", "float", "str", "complex"])},
        optional={"name": st.sampled_from(["t0", "t1", "x"]), "v": LEAF, "re": LEAF, "im": LEAF},
    )
    | LEAF,
    lambda inner: st.fixed_dictionaries(
        {"t": st.sampled_from(["tuple", "list"]), "items": st.lists(inner, max_size=3)}
    ),
    max_leaves=10,
)
ENTRY = st.fixed_dictionaries(
    {
        "dtype": st.sampled_from(["F32", "F64", "BOOL", "I64", "U8", "BF16", "C64", "U16", "X"]),
        "shape": st.lists(st.integers(-1, 5), max_size=3),
        "data_offsets": st.lists(st.integers(-1, 40), min_size=2, max_size=2),
    }
)


@FUZZ
@given(
    st.dictionaries(st.sampled_from(["t0", "t1", "x"]), ENTRY, max_size=2),
    st.none() | st.fixed_dictionaries({"version": st.just(1), "runs": st.lists(TREES, max_size=5)}),
    st.binary(max_size=48),
)
def test_read_case_on_forged_headers(scratch, entries, tree, data):
    header: dict[str, Any] = dict(entries)
    if tree is not None:
        header["__metadata__"] = {outtree.TREE_KEY: json.dumps(tree)}
    text = json.dumps(header).encode()
    try_read(scratch / "cases-3.safetensors", struct.pack("<Q", len(text)) + text + data)


# ---- d) the submission readers ----

TASK_IDS = sorted(load_suite())[:20]
CODE = "import torch\n\ndef f(x):\n    return x\n"
CONTENT = st.one_of(
    st.just(CODE.encode()),
    st.binary(max_size=60),
    st.text(max_size=60).map(str.encode),
    st.just(b"caf\xe9 = 1\n"),
    st.just("\ud800".encode("utf-8", "surrogatepass")),
    st.just(f"```python\n{CODE}```<|im_end|>".encode()),
)
NAME = st.one_of(
    st.sampled_from([t.split("/")[1] for t in TASK_IDS] + ["__pycache__", "x", " ", "-", "é"]),
    st.text(st.characters(codec="utf-8", exclude_characters="/\0"), min_size=1, max_size=12),
    st.binary(min_size=1, max_size=12).filter(lambda b: b"/" not in b and b"\0" not in b),
).filter(lambda n: n not in (".", "..", b".", b".."))


def fs_name(name: str | bytes, suffix: str = "") -> bytes:
    raw = name if isinstance(name, bytes) else name.encode("utf-8", "surrogateescape")
    return raw + suffix.encode()


def check_candidates(cands: list[Candidate], where: str | None = None) -> None:
    for c in cands:
        assert isinstance(c, Candidate)
        for text in (c.source, c.task_id, c.code, c.key, json.dumps(c.meta)):
            text.encode("utf-8")  # all of it goes into the store, the child's folder, the report
        if c.problem is None:
            assert c.code.strip() and c.task_id and find(c.task_id) is not None
        else:
            verdict, message = c.problem
            assert isinstance(verdict, Verdict) and message.startswith(f"{c.source}: ")
            assert "\n" not in message.removeprefix(c.source)  # a file name may hold one
        if where is not None:
            assert c.source.startswith(f"{where}:")


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(["Activation", "Math"]) | NAME, max_size=3),
            NAME,
            st.sampled_from([".py", ".py", "", ".txt"]),
            CONTENT,
            st.sampled_from(["file", "file", "dir", "link"]),
        ),
        max_size=6,
    )
)
def test_read_source_on_folders(files):
    with scratch_dir() as tmp:
        root = os.fsencode(tmp)
        made = 0
        for dirs, name, suffix, content, what in files:
            folder = os.path.join(root, *[fs_name(d) for d in dirs]) if dirs else root
            path = os.path.join(folder, fs_name(name, suffix))
            try:
                os.makedirs(folder, exist_ok=True)
                if what == "dir":
                    os.makedirs(path)
                elif what == "link":
                    os.symlink(b"/nonexistent/" + fs_name(name), path)
                else:
                    with open(path, "xb") as f:
                        f.write(content)
            except OSError:
                continue  # a name clash or one too long: not made
            made += path.endswith(b".py")
        cands = read_source(Path(tmp))
        check_candidates(cands)
        assert len(cands) <= made
        for c in cands:
            assert c.source.startswith(tmp)


@FUZZ
@given(NAME, CONTENT)
def test_read_source_on_one_py_file(name, content):
    with scratch_dir() as tmp:
        path = os.path.join(os.fsencode(tmp), fs_name(name, ".py"))
        try:
            with open(path, "xb") as f:
                f.write(content)
        except OSError:
            assume(False)
        cands = read_source(Path(os.fsdecode(path)))
        assert len(cands) == 1
        check_candidates(cands)


RECORD = st.fixed_dictionaries(
    {},
    optional={
        "predict": st.just(CODE) | st.text(max_size=40) | LEAF | st.lists(LEAF, max_size=2),
        "code": st.just(CODE) | LEAF,
        "file": st.sampled_from([f"{t}.py" for t in TASK_IDS]) | st.text(max_size=20) | LEAF,
        "task_id": st.sampled_from(TASK_IDS) | LEAF,
        "method": LEAF,
        "sample": st.dictionaries(st.text(max_size=3), LEAF, max_size=2),
    },
)
LINE = st.one_of(
    RECORD.map(json.dumps),
    JSON.map(json.dumps),
    RECORD.map(lambda r: json.dumps(r, ensure_ascii=False)),
    st.text(max_size=40),
    st.sampled_from(
        [
            "{not json",
            "[" * 5000,  # deeper than the JSON parser recurses
            '{"predict": ' + "1" * 5000 + "}",  # an int past Python's digit limit
            '{"predict": "\\ud800", "file": "Activation/gelu.py"}',  # a lone surrogate
            '{"predict": "x", "file": "\\udcff"}',
            json.dumps({"predict": CODE + "#" * 70_000, "file": "Activation/gelu.py"}),
            "",
            "   ",
        ]
    ),
).map(str.encode) | st.binary(max_size=40)


@FUZZ
@given(st.lists(LINE, max_size=6), st.sampled_from([b"\n", b"\r\n"]))
def test_read_source_on_jsonl(lines, newline):
    with scratch_dir() as tmp:
        path = Path(tmp) / "preds.jsonl"
        raw = newline.join(lines)
        path.write_bytes(raw)
        cands = read_source(path)
        check_candidates(cands, str(path))
        numbered = [n for n, ln in enumerate(raw.splitlines(), 1) if ln.strip()]
        assert [c.source for c in cands] == [f"{path}:{n}" for n in numbered]


def test_regression_jsonl_lines_that_crashed_the_reader(tmp_path):
    """Each of these lines once made ``read_source`` raise (or gave a candidate the store and
    the child's folder could not take); now each is one unreadable candidate, named by line."""
    lines = [
        "[" * 100_000,  # RecursionError from json.loads
        '{"predict": ' + "1" * 5000 + "}",  # ValueError: over Python's 4,300 digits
        '{"predict": "\\ud800", "file": "Activation/gelu.py"}',  # a lone surrogate: the key
        '{"predict": "x", "file": "\\udcff.py"}',  # one in the task's name: the store
        json.dumps({"predict": CODE, "file": "Activation/gelu.py"}),
    ]
    path = tmp_path / "preds.jsonl"
    path.write_text("\n".join(lines) + "\n")
    cands = read_source(path)
    check_candidates(cands, str(path))
    assert [c.source for c in cands] == [f"{path}:{n}" for n in range(1, 6)]
    assert [c.problem and c.problem[0] for c in cands] == [Verdict.UNREADABLE] * 4 + [None]
    reasons = [c.problem[1].split(": ", 1)[1] for c in cands[:4] if c.problem]
    assert reasons[0] == "malformed JSON (nested too deeply)"
    assert reasons[1].startswith("malformed JSON (Exceeds the limit (4300 digits)")
    assert "lone surrogate" in reasons[2] and "not valid Unicode" in reasons[3]


def test_regression_file_names_that_are_not_utf8(tmp_path):
    """A file name with bytes UTF-8 cannot decode gave a candidate whose source (part of its
    key) the store could not take; now it is unreadable, its name shown with escapes."""
    (tmp_path / "Activation").mkdir()
    os.close(
        os.open(os.path.join(os.fsencode(tmp_path), b"Activation", b"gel\xffu.py"), os.O_CREAT)
    )
    (tmp_path / "Activation" / "gelu.py").write_text(CODE)
    good, bad = read_source(tmp_path)  # sorted: the escape sorts after 'u'
    check_candidates([bad, good])
    assert bad.problem == (Verdict.UNREADABLE, f"{bad.source}: file name is not UTF-8")
    assert bad.source == f"{tmp_path}/Activation/gel\\udcffu.py" and good.problem is None
    (single,) = read_source(Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"\x80.py"))))
    assert single.problem and single.problem[0] == Verdict.UNREADABLE


# ---- e) the results store ----

TEXT = st.text(max_size=30)
FLOAT = st.floats() | st.none()
SCALARS_JSON = st.none() | st.integers() | st.floats() | TEXT
CASES = st.builds(
    CaseTiming,
    index=st.integers(0, 100),
    label=TEXT,
    kernel_ms=st.floats(),
    eager_ms=st.floats(),
    reps=st.integers(0, 10**6),
)
RESULTS = st.builds(
    Result,
    task_id=TEXT,
    verdict=st.sampled_from(list(Verdict)),
    detail=TEXT,
    source=st.just("preds.jsonl:1"),
    candidate_sha256=st.just("0" * 64),
    device=st.just("cuda"),
    stage=st.sampled_from(["read", "import", "run", "check", "perf", "done"]),
    speedup=FLOAT,
    cases=st.lists(CASES, max_size=1),
    meta=st.dictionaries(st.sampled_from(["method", "model", "round", "sample"]), SCALARS_JSON),
)
KEYS = st.sampled_from(["a|A/a|0", "b|B/b|1", "c|C/c|2"]) | st.text(min_size=1, max_size=40)
COUNTER = itertools.count()


def as_json(records: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(r, sort_keys=True) for r in records]  # NaN and -0.0 compare as written


@FUZZ
@given(
    st.lists(RESULTS, min_size=1, max_size=3),
    st.lists(st.tuples(KEYS, st.integers(0, 2)), max_size=10),
)
def test_store_loses_nothing(scratch, results, puts):
    """Every record put is read back once (the last put of a key replaces the others), from the
    store, the store reopened, and a store seeded from its export."""
    folder = scratch / f"store-{next(COUNTER)}"
    want: dict[str, dict[str, Any]] = {}
    store = Store(folder / "kbx.sqlite")
    for n, (key, which) in enumerate(puts):
        record = dict(results[which % len(results)].record(), key=key)  # as ``run_eval`` does
        record["started_at"] = float(n)  # which put it was
        store.put(key, record)
        want.pop(key, None)
        want[key] = record  # replaced by key, and last in order
    expected = as_json(list(want.values()))
    assert store.keys() == set(want)
    assert as_json(store.records()) == expected
    export(store, folder, suite_size=10)
    store.close()
    reopened = Store(folder / "kbx.sqlite")  # after a restart
    assert as_json(reopened.records()) == expected
    reopened.close()
    seeded = Store(folder / "seeded.sqlite")  # another machine's, from the export
    assert seeded.seed(folder / "results.jsonl") == len(want)
    assert sorted(as_json(seeded.records())) == sorted(expected)
    seeded.close()
    shutil.rmtree(folder)
