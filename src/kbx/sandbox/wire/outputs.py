"""The child's output files: one safetensors file per judged case, read with nothing unpickled.

The child saves a case's runs (1, or 3 for a random task) as ``{kind}-{index}.safetensors`` in its
folder: the tensors as the file's entries, and the nested structure around them (tuples, lists,
None, scalars, tensor references) as JSON in the file's metadata under ``TREE_KEY``.  The file
is written by a process that ran untrusted code, so ``read_case`` treats it as hostile: it opens
only a regular file (no link, no FIFO), reads it whole under a size cap (no mapping: a file
truncated under the parent would kill it with SIGBUS), checks its hash against the one the child
announced, validates the tree against a schema (depth, node count, run count), and insists that
the tree and the entries match one to one.  The tensors are written from their own memory and
read back as views of the one buffer the file was read into (``tensorfile``).  Complex tensors
are stored as ``torch.view_as_real`` and marked in the tree; a bool tensor holding bytes other
than 0 and 1 is refused.
``encode_case`` never refuses what a candidate returned: what the file cannot hold (a dtype or
layout, nesting, too many nodes, a huge int, a long string, an object) is written as a
placeholder that names it, read back as ``tensors.Unstored``, which the judge turns into
``wrong_dtype`` or ``wrong_shape``; so a candidate's odd output is its own verdict, never a
crash of kbx's writer.  What it encodes always reads back.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import struct
from pathlib import Path
from typing import Any

import torch
from pydantic import ConfigDict, TypeAdapter
from pydantic import ValidationError as _ValidationError

from kbx.sandbox.wire import tensorfile
from kbx.sandbox.wire.channel import explain, one_line
from kbx.sandbox.wire.outtree import (
    COMPLEX,
    DTYPES,
    INT_RANGE,
    KINDS,
    MAX_DEPTH,
    MAX_HEADER_BYTES,
    MAX_NODES,
    MAX_RUNS,
    MAX_STR_CHARS,
    META,
    TREE_KEY,
    Bool,
    Complex,
    Float,
    Int,
    OutputError,
    Seq,
    Str,
    TensorRef,
    Unstorable,
    check,
    parse_tree,
)
from kbx.suite.tensors import Unstored


def case_bytes_cap(expected_bytes: int) -> int:
    """The largest output file ``read_case`` should accept for a case whose reference outputs
    (all runs) take ``expected_bytes``: 4x leaves room for a candidate that returns a wider dtype
    (float64 for float16: a wrong dtype, but the judge must still read it to say so), and 64 MiB
    for the header, scalars and small outputs of any case."""
    return 4 * max(0, expected_bytes) + (64 << 20)


def file_name(kind: str, index: int) -> str:
    if kind not in KINDS or not 0 <= index <= 99_999:
        raise OutputError(f"no output file for {kind!r} {index!r}")
    return f"{kind}-{index}.safetensors"


def encode_case(runs: list[Any]) -> bytes:
    """The file's bytes for ``runs`` (outputs as ``runner.to_cpu`` makes them)."""
    return b"".join(case_pieces(runs))


def case_pieces(runs: list[Any]) -> list[bytes | memoryview]:
    """The file's bytes for ``runs`` in pieces: its header, then each tensor's own memory
    (``tensorfile.pieces``: nothing copied)."""
    if len(runs) > MAX_RUNS:
        raise OutputError(f"{len(runs)} runs, over {MAX_RUNS}")
    tensors: dict[str, torch.Tensor] = {}
    taken: set[int] = set()  # their storages
    left = [MAX_NODES]
    nodes = [encode(run, tensors, taken, 1, left, len(runs) - i - 1) for i, run in enumerate(runs)]
    tree = json.dumps({"version": 1, "runs": nodes})
    check(parse_tree(tree))
    return tensorfile.pieces(tensors, {TREE_KEY: tree})


FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)  # a disk full, a file over the size limit


def save_case(path: Path, runs: list[Any]) -> str:
    """Write ``runs`` to ``path``; the SHA-256 of the bytes written (``saved``)."""
    return saved(path, runs)[0]


def saved(path: Path, runs: list[Any]) -> tuple[str, int]:
    """Write ``runs`` to ``path``; the SHA-256 of the bytes written and their count.  Outputs
    too large for the child's folder or its file size limit (a candidate that returned far too
    much, or filled its own folder) are written as placeholders saying so, one per run: the
    judge's ``wrong_shape``, not a crash of kbx's writer."""
    pieces = case_pieces(runs)
    try:
        return write_pieces(path, pieces)
    except OSError as exc:
        if exc.errno not in FULL:
            raise
    size = sum(len(p) for p in pieces)
    what = f"outputs of {size} bytes, more than its folder or file size limit could hold"
    del pieces
    tree = json.dumps({"version": 1, "runs": [{"t": "unstorable", "what": what}] * len(runs)})
    return write_pieces(path, tensorfile.pieces({}, {TREE_KEY: tree}))


def write_pieces(path: Path, pieces: list[bytes | memoryview]) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "wb") as f:
        for piece in pieces:
            f.write(piece)
            digest.update(piece)
            size += len(piece)
    return digest.hexdigest(), size


def write_case(folder: Path, kind: str, index: int, runs: list[Any]) -> str:
    """Save ``runs`` in ``folder`` under ``file_name``; the name."""
    name = file_name(kind, index)
    save_case(folder / name, runs)
    return name


def encode(
    x: Any,
    tensors: dict[str, torch.Tensor],
    taken: set[int],
    depth: int,
    left: list[int] | None = None,
    reserve: int = 0,
) -> dict[str, Any]:
    """``x`` as a tree node; its tensors go into ``tensors``, their storages into ``taken``.
    What the file cannot hold becomes an ``unstorable`` placeholder that names it, never an
    error: a tensor of another dtype or layout, nesting past ``MAX_DEPTH``, more than
    ``MAX_NODES`` nodes (``left[0]``: nodes still free, ``reserve`` of them kept for the siblings
    still to come), an int out of range, a long or unencodable string, any other object.  Scalars
    are read with their base type's own methods: a subclass's are candidate code."""
    left = [MAX_NODES] if left is None else left
    if isinstance(x, tuple | list):
        kind = "tuple" if isinstance(x, tuple) else "list"
        items = list(tuple.__iter__(x) if isinstance(x, tuple) else list.__iter__(x))
        n = len(items)
        if depth >= MAX_DEPTH and n:
            return unstorable(left, f"outputs nested deeper than {MAX_DEPTH}")
        if left[0] - reserve < n + 1:
            return unstorable(left, f"a {kind} of {n} items, over {MAX_NODES} output nodes")
        left[0] -= 1
        done = [
            encode(v, tensors, taken, depth + 1, left, reserve + n - i - 1)
            for i, v in enumerate(items)
        ]
        return {"t": kind, "items": done}
    left[0] -= 1
    if isinstance(x, torch.Tensor):
        try:
            t = storable(x, taken)
        except OutputError as exc:
            return unstorable_tensor(x, str(exc))
        name = f"t{len(tensors)}"
        tensors[name] = t
        return {"t": "tensor", "name": name, "complex": x.dtype in COMPLEX}
    return encode_scalar(x)


def encode_scalar(x: Any) -> dict[str, Any]:
    """A leaf other than a tensor (its node counted already)."""
    if x is None:
        return {"t": "none"}
    if isinstance(x, bool):
        return {"t": "bool", "v": x is True}
    if isinstance(x, int):
        v = int.__index__(x)
        if not INT_RANGE[0] <= v <= INT_RANGE[1]:
            return unstorable([0], "an int out of the 64-bit range", cost=0)
        return {"t": "int", "v": v}
    if isinstance(x, float):
        return {"t": "float", "v": float.__float__(x)}
    if isinstance(x, complex):
        c = complex.__complex__(x)
        return {"t": "complex", "re": c.real, "im": c.imag}
    if isinstance(x, str):
        s = str.__str__(x)
        if len(s) <= MAX_STR_CHARS and utf8(s):
            return {"t": "str", "v": s}
        return unstorable([0], f"a string of {len(s)} characters", cost=0)
    return unstorable([0], f"an object of type {short(type(x).__name__)}", cost=0)


def unstorable(left: list[int], what: str, cost: int = 1) -> dict[str, Any]:
    """A placeholder node (``cost``: the node it takes, unless counted already)."""
    left[0] -= cost
    return {"t": "unstorable", "what": what[:MAX_STR_CHARS]}


def unstorable_tensor(x: torch.Tensor, why: str) -> dict[str, Any]:
    """A tensor the file cannot hold, by its dtype and shape where they can be read."""
    node: dict[str, Any] = {"t": "unstorable", "what": short(why)}
    try:
        dtype, shape = str(x.dtype), [int(n) for n in x.shape]
    except Exception:  # noqa: BLE001 - a nested tensor has no shape: named without one
        return node
    if len(shape) <= 64:
        node |= {"dtype": dtype[:64], "shape": shape}
    return node


def short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def utf8(s: str) -> bool:
    try:
        s.encode()
    except UnicodeEncodeError:
        return False
    return True


def storable(x: torch.Tensor, taken: set[int]) -> torch.Tensor:
    """``x`` dense, contiguous, on the CPU, in a storage not ``taken`` (then taken)."""
    if x.layout != torch.strided or x.is_quantized or x.is_meta or x.is_nested:
        raise OutputError(f"a {x.layout} {x.device.type} tensor, which kbx cannot store")
    t = x.detach().as_subclass(torch.Tensor).cpu().resolve_conj().resolve_neg()
    if t.dtype in COMPLEX:
        t = torch.view_as_real(t)
    if t.dtype not in DTYPES:
        raise OutputError(f"a {t.dtype} tensor, which kbx's output file cannot hold")
    t = t.contiguous()
    if t.untyped_storage().data_ptr() in taken:
        t = t.clone()  # safetensors refuses entries sharing memory
    taken.add(t.untyped_storage().data_ptr())
    return t


class TooLarge(OutputError):
    """A regular file of the child's over the cap: what kbx's child wrote for a candidate that
    returned far too much (a wrong shape, not tampering)."""

    def __init__(self, size: int, cap: int, name: str = "") -> None:
        super().__init__(f"{name}: " * bool(name) + f"too large ({size} bytes, cap {cap})")
        self.size, self.cap = size, cap


def read_case(
    path: Path,
    max_bytes: int,
    sha256: str | None = None,
    dir_fd: int | None = None,
    owner: int | None = None,
    size: int | None = None,
) -> list[Any]:
    """The runs saved in ``path`` (whose bytes must hash to ``sha256``, when given), as CPU
    tensors, tuples, lists and scalars; ``OutputError``, its message naming the file, for
    anything but what ``encode_case`` could have made.  ``dir_fd``: the folder's descriptor,
    which ``path``'s name is opened in; ``owner``: the uid the file must belong to; ``size``:
    the bytes the child announced it wrote (a file of another size is not kbx's, checked before
    the cap: a file of the child's own over it is tampering, not outputs too large)."""
    try:
        data = read_bytes(path, max_bytes, dir_fd, owner, size)
        if sha256 is not None and hashlib.sha256(tensorfile.numpy(data).data).hexdigest() != sha256:
            raise OutputError("its bytes are not those the child announced")
        return decode_case(data)
    except TooLarge as exc:
        raise TooLarge(exc.size, exc.cap, path.name) from None
    except OutputError as exc:
        raise OutputError(f"{path.name}: {exc}") from None


def read_bytes(
    path: Path,
    max_bytes: int,
    dir_fd: int | None = None,
    owner: int | None = None,
    size: int | None = None,
) -> torch.Tensor:
    """The bytes of ``path`` if it is a regular file (not a link, FIFO or device: opened without
    following links or blocking, checked on the descriptor) of ``size`` bytes (if given) and at
    most ``max_bytes``, owned by ``owner`` (if given), read once into an uninitialised uint8
    tensor of the file's size (nothing zero-filled first)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path.name if dir_fd is not None else path, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutputError("a symbolic link in place of kbx's file") from None
        raise OutputError(f"cannot open ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OutputError(f"not a regular file ({what(info.st_mode)})")
        if owner is not None and info.st_uid != owner:
            raise OutputError(f"a file of uid {info.st_uid}, not of the child's")
        if size is not None and info.st_size != size:
            raise OutputError(f"{info.st_size} bytes, not the {size} the child announced")
        if info.st_size > max_bytes:
            raise TooLarge(info.st_size, max_bytes)
        data = torch.empty(info.st_size, dtype=torch.uint8)
        view = tensorfile.numpy(data).data
        with open(fd, "rb", closefd=False, buffering=0) as f:
            got = 0
            while got < len(view) and (n := f.readinto(view[got:])):
                got += n
            if got < len(view) or f.read(1):
                raise OutputError("changed size while read")
    finally:
        os.close(fd)
    return data


def what(mode: int) -> str:
    """The kind of a file that is not a regular one."""
    kinds = {stat.S_ISFIFO: "a FIFO", stat.S_ISDIR: "a folder", stat.S_ISSOCK: "a socket"}
    return next((name for test, name in kinds.items() if test(mode)), "a device")


def decode_case(data: bytes | torch.Tensor) -> list[Any]:
    """The runs in a file's bytes (a uint8 tensor, as ``read_bytes`` makes), checked as
    ``read_case`` says; the tensors are views of ``data`` (of a copy, for ``bytes``)."""
    buf = data if isinstance(data, torch.Tensor) else tensorfile.buffer(data)
    size, header = read_header(buf)
    meta = metadata(header)
    if set(meta) - {TREE_KEY}:
        raise OutputError(f"metadata other than {TREE_KEY}")
    tree = parse_tree(meta.get(TREE_KEY))
    refs = check(tree)
    entries = tensorfile.tensors(buf, 8 + size, header)
    names = [r.name for r in refs]
    if len(set(names)) != len(names) or set(names) != set(entries):
        raise OutputError("the tree and the tensors do not match")
    restored = {r.name: restore(entries[r.name], r) for r in refs}
    return [build(node, restored) for node in tree.runs]


_HEADER: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])
_METADATA: TypeAdapter[dict[str, str]] = TypeAdapter(dict[str, str], config=ConfigDict(strict=True))


def read_header(data: torch.Tensor) -> tuple[int, dict[str, Any]]:
    """The header's length and its JSON object."""
    size = struct.unpack("<Q", tensorfile.numpy(data[:8]).tobytes())[0] if len(data) >= 8 else -1
    if not 0 < size <= min(MAX_HEADER_BYTES, len(data) - 8):
        raise OutputError("not a valid safetensors file (no header of a valid length)")
    try:
        return size, _HEADER.validate_json(tensorfile.numpy(data[8 : 8 + size]).tobytes())
    except _ValidationError as exc:
        raise OutputError(one_line(f"not a valid safetensors header: {explain(exc)}")) from None


def metadata(header: dict[str, Any]) -> dict[str, str]:
    try:
        return _METADATA.validate_python(header.get(META, {}))
    except _ValidationError as exc:
        raise OutputError(one_line(f"not a valid safetensors header: {explain(exc)}")) from None


def restore(t: torch.Tensor, ref: TensorRef) -> torch.Tensor:
    """A stored entry as the tensor the child saved, else ``OutputError``."""
    if t.dtype == torch.bool and t.numel() and int(t.view(torch.uint8).max()) > 1:
        raise OutputError(f"bool tensor {ref.name} holds bytes other than 0 and 1")
    if not ref.complex:
        return t
    if t.dtype not in COMPLEX.values() or t.dim() == 0 or t.shape[-1] != 2:
        raise OutputError(f"complex tensor {ref.name} stored as {t.dtype} {list(t.shape)}")
    # a view of the file's buffer may sit at an odd float offset, which complex views refuse
    return torch.view_as_complex(t if t.storage_offset() % 2 == 0 else t.clone())


def build(node: Any, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(node, TensorRef):
        return tensors[node.name]
    if isinstance(node, Seq):
        items = [build(item, tensors) for item in node.items]
        return tuple(items) if node.t == "tuple" else items
    if isinstance(node, Float):
        return float(node.v)
    if isinstance(node, Bool | Int | Str):
        return node.v
    if isinstance(node, Complex):
        return complex(node.re, node.im)
    if isinstance(node, Unstorable):
        shape = None if node.shape is None else tuple(node.shape)
        return Unstored(node.what, node.dtype, shape)
    return None
