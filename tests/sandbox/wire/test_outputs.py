"""The child's output files: exact round trips, and every way a file is refused."""

import hashlib
import json
import os
import struct
import warnings

import pytest
import torch
from safetensors.torch import load_file, save_file

from kbx.sandbox.wire import outtree
from kbx.sandbox.wire.outputs import (
    TREE_KEY,
    OutputError,
    TooLarge,
    case_bytes_cap,
    decode_case,
    encode_case,
    file_name,
    read_case,
    write_case,
)
from kbx.suite.tensors import Unstored

CAP = 1 << 30
DTYPES = [
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
    torch.complex64,
    torch.complex128,
]
SHAPES = [(), (0,), (3, 0, 2), (1,), (5, 7), (2, 3, 4)]
with warnings.catch_warnings():  # "ComplexHalf support is experimental"
    warnings.simplefilter("ignore")
    HALF_COMPLEX = torch.zeros(2, dtype=torch.complex32)


def sample(dtype: torch.dtype, shape: tuple[int, ...]) -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, generator=gen, dtype=dtype) * 1e3
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, generator=gen, dtype=dtype)


def bits(t: torch.Tensor) -> torch.Tensor:
    if t.is_complex():
        t = torch.view_as_real(t.resolve_conj())
    return t.resolve_neg().contiguous().reshape(-1).view(torch.uint8)


def same(a, b) -> bool:
    """Equal in structure, types, dtypes, shapes and bits (NaN equal to NaN, -0.0 not to 0.0)."""
    if isinstance(a, torch.Tensor):
        return (
            type(b) is torch.Tensor
            and (a.dtype, a.shape) == (b.dtype, b.shape)
            and torch.equal(bits(a), bits(b))
        )
    if isinstance(a, tuple | list):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, float | complex):
        return type(a) is type(b) and repr(a) == repr(b)
    return type(a) is type(b) and a == b


def round_trip(tmp_path, runs, kind="cases", index=0):
    name = write_case(tmp_path, kind, index, runs)
    assert name == f"{kind}-{index}.safetensors"
    return read_case(tmp_path / name, CAP)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_every_dtype_and_shape_round_trips_exactly(tmp_path, dtype, shape):
    t = sample(dtype, shape)
    (back,) = round_trip(tmp_path, [t])
    assert same(t, back)


def test_extreme_values_round_trip_bit_for_bit(tmp_path):
    f = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 5e-324, 1.0, 65504.0])
    run = tuple(f.to(d) for d in (torch.float16, torch.bfloat16, torch.float32, torch.float64))
    ints = tuple(
        torch.tensor([torch.iinfo(d).min, torch.iinfo(d).max], dtype=d) for d in DTYPES[1:6]
    )
    (back,) = round_trip(tmp_path, [run + ints])
    assert same(run + ints, back)


def test_non_contiguous_and_shared_tensors_are_saved_contiguous(tmp_path):
    base = torch.arange(24.0).reshape(4, 6)
    views = (base, base.t(), base[:, ::2], base[1], base, torch.view_as_real(torch.randn(3) * 1j))
    conj = torch.randn(3, dtype=torch.complex64).conj()  # a lazy conjugate
    neg = torch.randn(2, dtype=torch.complex64).conj().imag  # a lazy negation
    (back,) = round_trip(tmp_path, [(*views, conj, neg)])
    assert all(same(a, b) for a, b in zip((*views, conj, neg), back, strict=True))
    assert all(t.is_contiguous() for t in back)


def test_structure_and_scalars_round_trip(tmp_path):
    t = torch.ones(2)
    run = (
        t,
        [t, (None, (torch.zeros(()),))],
        None,
        True,
        False,
        0,
        -(2**63),
        2**64 - 1,
        1.5,
        float("nan"),
        float("-inf"),
        complex(1, -2),
        complex(float("inf"), float("nan")),
        "<object of type Foo>",
        "ünïcødé ✓",
        (),
        [],
    )
    runs = [run, t, None]  # three runs: a random task's
    back = round_trip(tmp_path, runs, "timed", 99_999)
    assert isinstance(back, list) and len(back) == 3
    assert same(runs, back)


def test_empty_runs_round_trip(tmp_path):
    assert round_trip(tmp_path, [], "bench", 3) == []
    assert round_trip(tmp_path, [[]], "refill", 1) == [[]]


def test_subclass_and_grad_tensors_are_stored_plain(tmp_path):
    class Mine(torch.Tensor):
        pass

    t = torch.randn(3, requires_grad=True) * 2
    (a, b) = round_trip(tmp_path, [t, torch.ones(2).as_subclass(Mine)])
    assert type(a) is torch.Tensor and not a.requires_grad and torch.equal(a, t.detach())
    assert type(b) is torch.Tensor


@pytest.mark.parametrize(
    ("kind", "index", "runs", "reason"),
    [
        ("outputs", 0, [1], "no output file"),
        ("cases", -1, [1], "no output file"),
        ("cases", 100_000, [1], "no output file"),
        ("cases", 0, [1] * 5, "5 runs, over 4"),
    ],
)
def test_write_refuses_what_kbx_never_writes(tmp_path, kind, index, runs, reason):
    with pytest.raises(OutputError, match=reason):
        write_case(tmp_path, kind, index, runs)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("output", "what", "dtype", "shape"),
    [
        (object(), "an object of type object", None, None),
        ({"a": 1}, "an object of type dict", None, None),
        (torch.zeros(2, dtype=torch.uint16), "torch.uint16 tensor", "torch.uint16", (2,)),
        (torch.zeros(2, dtype=torch.uint32), "torch.uint32 tensor", "torch.uint32", (2,)),
        (torch.zeros(2, dtype=torch.float8_e4m3fn), "float8", "torch.float8_e4m3fn", (2,)),
        (HALF_COMPLEX, "complex32", "torch.complex32", (2,)),
        (torch.eye(2).to_sparse(), "sparse", "torch.float32", (2, 2)),
        (torch.empty(2, device="meta"), "meta tensor", "torch.float32", (2,)),
        (2**64, "an int out of the 64-bit range", None, None),
        (-(2**63) - 1, "an int out of the 64-bit range", None, None),
        ("x" * 257, "a string of 257 characters", None, None),
        ("\ud800", "a string of 1 characters", None, None),
    ],
)
def test_what_the_file_cannot_hold_is_a_placeholder(tmp_path, output, what, dtype, shape):
    """A candidate's odd output is its own verdict (the judge's), never a failure of kbx's
    writer: a placeholder names it, and everything around it is kept."""
    (got,) = round_trip(tmp_path, [(torch.ones(1), output, 3)])
    assert torch.equal(got[0], torch.ones(1)) and got[2] == 3
    assert isinstance(got[1], Unstored) and what in got[1].what
    assert (got[1].dtype, got[1].shape) == (dtype, shape)


def nested(depth: int):
    x = torch.ones(1)
    for _ in range(depth - 1):
        x = (x,)
    return x


def test_write_cuts_depth_and_size_with_placeholders(tmp_path):
    assert same(round_trip(tmp_path, [nested(16)]), [nested(16)])
    (deep,) = round_trip(tmp_path, [nested(17)])
    for _ in range(15):
        (deep,) = deep
    assert deep == Unstored("outputs nested deeper than 16")
    assert round_trip(tmp_path, [tuple(range(4095))]) == [tuple(range(4095))]  # 4096 nodes
    (wide,) = round_trip(tmp_path, [tuple(range(4096))])
    assert wide == Unstored("a tuple of 4096 items, over 4096 output nodes")
    # the budget is shared by the runs and siblings: the later ones still get a node each
    runs = round_trip(tmp_path, [[tuple(range(3000))] * 2] * 3)
    assert runs[0][0] == tuple(range(3000)) and isinstance(runs[0][1], Unstored)
    assert all(isinstance(r, Unstored | list) for r in runs[1:])


class Sly(float):
    def __float__(self):
        raise AssertionError("candidate code ran in kbx's writer")

    def __repr__(self):
        raise AssertionError("candidate code ran in kbx's writer")


class SlyStr(str):
    def __str__(self):
        raise AssertionError("candidate code ran in kbx's writer")


def test_scalar_subclasses_are_read_by_their_base_type(tmp_path):
    assert round_trip(tmp_path, [(Sly(1.5), SlyStr("x"))]) == [(1.5, "x")]


def test_file_names_and_bytes(tmp_path):
    assert [file_name(k, 7) for k in outtree.KINDS] == [
        "cases-7.safetensors",
        "refill-7.safetensors",
        "bench-7.safetensors",
        "timed-7.safetensors",
    ]
    for kind, index in [("outputs", 0), ("cases", -1), ("cases", 100_000), ("../cases", 0)]:
        with pytest.raises(OutputError, match="no output file"):
            file_name(kind, index)
    runs = [(torch.arange(6).reshape(2, 3), None), 1.5]
    data = encode_case(runs)
    assert isinstance(data, bytes) and encode_case(runs) == data  # the same bytes each time
    assert same(decode_case(data), runs)
    path = tmp_path / write_case(tmp_path, "cases", 0, runs)
    assert path.read_bytes() == data


def test_read_checks_the_announced_hash(tmp_path):
    path = tmp_path / write_case(tmp_path, "bench", 2, [torch.ones(3)])
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert same(read_case(path, CAP, digest), [torch.ones(3)])
    expect(path, "its bytes are not those the child announced", sha256="0" * 64)


def test_a_file_of_another_size_than_announced_is_not_kbxs_even_over_the_cap(tmp_path):
    """A file the child put in place of kbx's, larger than the cap, is tampering (``OutputError``:
    forbidden), not outputs too large (``TooLarge``: wrong_shape); kbx's own too-large file, of
    the size announced, stays ``TooLarge`` (tests/exploits/output_sparse_swap)."""
    path = tmp_path / write_case(tmp_path, "cases", 0, [torch.ones(3)])
    digest, size = hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_size
    assert same(read_case(path, CAP, digest, size=size), [torch.ones(3)])
    with open(path, "r+b") as f:
        f.truncate(CAP + 1)  # sparse: what a candidate's seek and one byte make
    with pytest.raises(OutputError) as info:
        read_case(path, CAP, digest, size=size)
    assert not isinstance(info.value, TooLarge)
    assert f"{CAP + 1} bytes, not the {size} the child announced" in str(info.value)
    with pytest.raises(TooLarge):
        read_case(path, CAP, digest, size=CAP + 1)


# ---- files the child could forge ----


def forged(tmp_path, tensors, tree, extra_meta=None):
    meta = {} if tree is None else {TREE_KEY: tree if isinstance(tree, str) else json.dumps(tree)}
    meta.update(extra_meta or {})
    path = tmp_path / "cases-0.safetensors"
    save_file(tensors, str(path), metadata=meta or None)
    return path


def raw_file(tmp_path, header: dict, data: bytes) -> os.PathLike:
    text = json.dumps(header).encode()
    path = tmp_path / "cases-0.safetensors"
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    return path


def ref(name="t0", complex_=False):
    return {"t": "tensor", "name": name, "complex": complex_}


def tree(*runs):
    return {"version": 1, "runs": list(runs)}


def expect(path, reason, cap=CAP, sha256=None):
    with pytest.raises(OutputError) as info:
        read_case(path, cap, sha256)
    text = str(info.value)
    assert reason in text, text
    assert text.startswith(os.path.basename(path)) and "\n" not in text


def test_file_over_the_cap_is_refused_unread(tmp_path):
    path = tmp_path / write_case(tmp_path, "cases", 0, [torch.zeros(1000)])
    size = path.stat().st_size
    assert read_case(path, size)
    expect(path, f"too large ({size} bytes, cap {size - 1})", cap=size - 1)


def test_missing_file_link_fifo_and_folder_are_refused(tmp_path):
    expect(tmp_path / "cases-0.safetensors", "cannot open (No such file or directory)")
    target = tmp_path / write_case(tmp_path, "cases", 1, [1])
    (tmp_path / "link.safetensors").symlink_to(target)
    expect(tmp_path / "link.safetensors", "a symbolic link in place of kbx's file")
    os.mkfifo(tmp_path / "fifo.safetensors")
    expect(tmp_path / "fifo.safetensors", "not a regular file")  # and does not block
    (tmp_path / "dir.safetensors").mkdir()
    expect(tmp_path / "dir.safetensors", "not a regular file")


@pytest.mark.parametrize(
    "data",
    [b"", b"\x00" * 8, b"\xff" * 64, b"PK\x03\x04 a zip", b"\x80\x02}q\x00.", b"\x05" + b"\0" * 7],
)
def test_non_safetensors_bytes_are_refused(tmp_path, data):
    path = tmp_path / "cases-0.safetensors"
    path.write_bytes(data)
    expect(path, "not a valid safetensors file")


def test_torch_save_pickle_is_refused_and_not_unpickled(tmp_path):
    path = tmp_path / "cases-0.safetensors"
    torch.save({"cases": [torch.ones(2)]}, path)
    expect(path, "not a valid safetensors file")


def test_truncated_file_is_refused(tmp_path):
    path = tmp_path / write_case(tmp_path, "cases", 0, [torch.randn(100)])
    path.write_bytes(path.read_bytes()[:-10])
    expect(path, "not a valid safetensors file")


@pytest.mark.parametrize(
    ("tree_", "reason"),
    [
        (None, "no kbx.tree metadata"),
        ("{not json", "malformed JSON"),
        ("[]", "Input should be an object"),
        (tree(ref()) | {"version": 2}, "version"),
        (tree(ref()) | {"extra": 1}, "Extra inputs"),
        (tree(ref() | {"x": 1}), "Extra inputs"),
        (tree({"t": "pickle", "v": "cos\nsystem"}), "runs.0: unknown t 'pickle'"),
        (tree({"t": "tensor", "name": "../t0"}), "pattern"),
        (tree({"t": "str", "v": {"a": 1}}), "runs.0.str.v"),
        (tree({"t": "int", "v": 2**64}), "less than or equal"),
        (tree({"t": "int", "v": 1.0}), "valid integer"),
        (tree({"t": "bool", "v": 1}), "valid boolean"),
        (tree({"t": "complex", "re": 1.0}), "Field required"),
        (tree({"t": "tuple", "items": {"a": 1}}), "valid array"),
        (tree(*[{"t": "none"}] * 5), "at most 4"),
    ],
)
def test_garbled_tree_is_refused(tmp_path, tree_, reason):
    expect(forged(tmp_path, {"t0": torch.ones(1)}, tree_), reason)


def test_tree_must_match_the_tensors_one_to_one(tmp_path):
    two = {"t0": torch.ones(1), "t1": torch.ones(1)}
    reason = "the tree and the tensors do not match"
    expect(forged(tmp_path, {}, tree(ref())), reason)  # a missing tensor
    expect(forged(tmp_path, two, tree(ref())), reason)  # an unreferenced one
    expect(forged(tmp_path, two, tree(ref(), ref(), ref("t1"))), reason)  # one used twice
    expect(forged(tmp_path, {"x": torch.ones(1)}, tree(ref())), reason)


def test_other_metadata_is_refused(tmp_path):
    path = forged(tmp_path, {"t0": torch.ones(1)}, tree(ref()), {"format": "pt"})
    expect(path, "metadata other than kbx.tree")


def test_tree_limits_depth_nodes_and_size(tmp_path):
    deep = ref()
    for _ in range(16):
        deep = {"t": "tuple", "items": [deep]}
    expect(forged(tmp_path, {"t0": torch.ones(1)}, tree(deep)), "nested deeper than 16")
    wide = {"t": "list", "items": [{"t": "none"}] * 4096}
    expect(forged(tmp_path, {}, tree(wide)), "more than 4096 nodes")
    much = {"t": "list", "items": [{"t": "none"}] * 4000}
    expect(forged(tmp_path, {}, tree(*[much] * 2)), "more than 4096 nodes")
    padded = json.dumps(tree({"t": "none"})).replace(":", ":" + " " * (9 << 20), 1)
    expect(forged(tmp_path, {}, padded), "over 8388608")
    abyss = '{"version": 1, "runs": [' + '{"t": "list", "items": [' * 300
    expect(forged(tmp_path, {}, abyss), "recursion limit")


@pytest.mark.parametrize(
    "tensor", [torch.zeros(2, dtype=torch.uint16), torch.zeros(2, dtype=torch.float8_e5m2)]
)
def test_tensors_of_other_dtypes_are_refused(tmp_path, tensor):
    expect(forged(tmp_path, {"t0": tensor}, tree(ref())), "unsupported dtype")


def test_complex64_entry_needs_the_complex_mark(tmp_path):
    c = torch.ones(2, dtype=torch.complex64)
    expect(forged(tmp_path, {"t0": c}, tree(ref())), "unsupported dtype")


@pytest.mark.parametrize(
    "tensor",
    [torch.ones(2, 3), torch.ones(()), torch.ones(2, 2, dtype=torch.int32), torch.ones(0)],
)
def test_complex_mark_on_a_wrong_entry_is_refused(tmp_path, tensor):
    expect(forged(tmp_path, {"t0": tensor}, tree(ref(complex_=True))), "complex tensor t0")


def test_bool_bytes_other_than_0_and_1_are_refused(tmp_path):
    header = {
        "__metadata__": {TREE_KEY: json.dumps(tree(ref()))},
        "t0": {"dtype": "BOOL", "shape": [3], "data_offsets": [0, 3]},
    }
    assert read_case(raw_file(tmp_path, header, b"\x00\x01\x01"), CAP)
    expect(raw_file(tmp_path, header, b"\x00\x02\x01"), "bytes other than 0 and 1")


def test_inconsistent_header_is_refused(tmp_path):
    meta = {TREE_KEY: json.dumps(tree(ref()))}
    both = {TREE_KEY: json.dumps(tree(ref(), ref("t1")))}
    cases = [
        {"t0": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}},  # size mismatch
        {"t0": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}},  # a gap
        {  # two entries over the same bytes
            "t0": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
            "t1": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        },
        {"t0": {"dtype": "F99", "shape": [2], "data_offsets": [0, 8]}},
        {"t0": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}},
        {"t0": {"dtype": "F32", "shape": [2**62, 2**62], "data_offsets": [0, 8]}},
    ]
    for entries in cases:
        header = {"__metadata__": both if "t1" in entries else meta, **entries}
        expect(raw_file(tmp_path, header, b"\0" * 12), "not a valid safetensors file (")


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        (b"[1, 2]", "safetensors header: Input should be an object"),
        (b"{not json}", "safetensors header: malformed JSON"),
        (b'{"__metadata__": {"kbx.tree": 5}}', "safetensors header: kbx.tree: Input should be"),
        (b'{"__metadata__": ["kbx.tree"]}', "safetensors header: Input should be a valid dict"),
        (b'{"__metadata__": {}}', "no kbx.tree metadata"),
        (b"{}", "no kbx.tree metadata"),
    ],
)
def test_bad_headers_are_refused(tmp_path, header, reason):
    path = tmp_path / "cases-0.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    expect(path, reason)


def test_header_length_must_fit_the_file_and_the_cap(tmp_path):
    path = tmp_path / "cases-0.safetensors"
    for size, body in [(0, b""), (100, b"{}"), (outtree.MAX_HEADER_BYTES + 1, b"{}")]:
        path.write_bytes(struct.pack("<Q", size) + body)
        expect(path, "no header of a valid length")


def test_case_bytes_cap_policy():
    assert case_bytes_cap(0) == 64 << 20
    assert case_bytes_cap(-5) == 64 << 20
    assert case_bytes_cap(1 << 30) == (4 << 30) + (64 << 20)
    assert outtree.MAX_RUNS == 4 and outtree.MAX_DEPTH == 16 and outtree.MAX_NODES == 4096


# ---- the layout: safetensors' own, written and read without copies ----


def test_safetensors_reads_what_kbx_writes(tmp_path):
    runs = [
        (torch.randn(5, 3), torch.arange(7, dtype=torch.int16), torch.ones(2, dtype=torch.bool))
    ]
    path = tmp_path / write_case(tmp_path, "timed", 0, runs)
    loaded = load_file(str(path))
    assert sorted(loaded) == ["t0", "t1", "t2"]
    assert all(torch.equal(loaded[f"t{i}"], runs[0][i]) for i in range(3))


def test_read_tensors_are_views_of_the_one_buffer_the_file_was_read_into(tmp_path):
    runs = [
        (torch.randn(1000), torch.arange(10, dtype=torch.int8), torch.randn(4, dtype=torch.float64))
    ]
    path = tmp_path / write_case(tmp_path, "cases", 0, runs)
    back = read_case(path, CAP)[0]
    assert same(list(back), list(runs[0]))
    storages = {t.untyped_storage().data_ptr() for t in back}
    assert len(storages) == 1  # one buffer: no tensor was copied out of it
    assert back[0].untyped_storage().nbytes() == path.stat().st_size


def test_misaligned_entries_are_refused(tmp_path):
    header = {
        "__metadata__": {TREE_KEY: json.dumps(tree(ref(), ref("t1")))},
        "t0": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
        "t1": {"dtype": "F32", "shape": [1], "data_offsets": [1, 5]},
    }
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path = tmp_path / "cases-0.safetensors"
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"\0" * 5)
    expect(path, "t1 is not aligned to its 4-byte elements")
