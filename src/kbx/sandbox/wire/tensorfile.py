"""The safetensors layout, written from tensors' own memory and read back as views of one buffer.

safetensors' Python functions copy a tensor two or three times on the way to a file (to bytes,
into one buffer, into the returned bytes) and once more on the way back (a bytearray per entry),
holding the GIL while they copy; a judged benchmark case's outputs are hundreds of MB, and the
parent's job threads share one GIL.  So the child writes each tensor's bytes straight from its
memory (``pieces``), and the parent reads a file once into one buffer and makes its tensors views
of it (``tensors``), after checking the header as safetensors does: known dtypes, byte counts that
match the shapes, aligned entries whose spans tile the data exactly.  The files stay safetensors
files: ``safetensors`` reads what ``pieces`` writes, and ``tensors`` reads what it writes.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Annotated, Any

import torch
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as _ValidationError

from kbx.sandbox.wire.channel import explain, one_line
from kbx.sandbox.wire.outtree import META, STORED, OutputError

NAMES = {dtype: name for name, dtype in STORED.items()}
# the dtype names safetensors knows besides the ones kbx keeps
OTHER = frozenset("U16 U32 U64 F8_E5M2 F8_E4M3 F8_E8M0 F4 F6_E2M3 F6_E3M2 C64".split())
Offset = Annotated[int, Field(ge=0)]
# the C method itself: the child counts the candidate's calls of ``torch.Tensor.numpy`` by
# patching that name (``opcheck``), and kbx's own writes are not the candidate's reads
numpy = torch._C.TensorBase.numpy


class Entry(BaseModel):
    """One tensor's line in the header."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    dtype: str
    shape: list[Offset]
    data_offsets: Annotated[list[Offset], Field(min_length=2, max_length=2)]


def buffer(data: bytes) -> torch.Tensor:
    """A uint8 tensor over a writable copy of ``data``, as ``tensors`` reads."""
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def invalid(reason: str) -> OutputError:
    return OutputError(one_line(f"not a valid safetensors file ({reason})", 300))


def pieces(tensors: dict[str, torch.Tensor], metadata: dict[str, str]) -> list[bytes | memoryview]:
    """The file's bytes as the header, then each tensor's memory (contiguous CPU tensors of the
    ``STORED`` dtypes, none sharing memory), widest elements first so that every entry stays
    aligned."""
    order = sorted(tensors, key=lambda n: (-tensors[n].element_size(), n))
    header: dict[str, Any] = {META: metadata} if metadata else {}
    views: list[bytes | memoryview] = []
    at = 0
    for name in order:
        t = tensors[name]
        end = at + t.nbytes
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [at, end]}
        views.append(numpy(t.reshape(-1).view(torch.uint8)).data)
        at = end
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data begins 8-byte aligned
    return [struct.pack("<Q", len(text)) + text, *views]


def tensors(buf: torch.Tensor, start: int, header: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The header's entries as views of ``buf[start:]`` (a uint8 tensor: no copies), else
    ``OutputError``."""
    data = buf[start:]
    spans: list[tuple[int, int, str, Entry]] = []
    for name, raw in header.items():
        if name == META:
            continue
        try:
            entry = Entry.model_validate(raw)
        except _ValidationError as exc:
            raise invalid(f"tensor {name}: {explain(exc)}") from None
        dtype = STORED.get(entry.dtype)
        if dtype is None and entry.dtype in OTHER:
            raise OutputError(f"tensor {name} of unsupported dtype {entry.dtype}")
        if dtype is None:
            raise invalid(f"tensor {name}: unknown dtype {entry.dtype}")
        begin, end = entry.data_offsets
        if end - begin != math.prod(entry.shape) * dtype.itemsize:
            raise invalid(f"tensor {name}: {end - begin} bytes for {entry.dtype} {entry.shape}")
        spans.append((begin, end, name, entry))
    spans.sort(key=lambda s: (s[0], s[1]))
    at = 0
    for begin, end, name, _ in spans:
        if begin != at:
            raise invalid(f"tensor {name}'s bytes overlap another's or leave a gap")
        at = end
    if at != len(data):
        raise invalid(f"{len(data) - at} bytes after the last tensor's")
    out: dict[str, torch.Tensor] = {}
    for begin, end, name, entry in spans:
        dtype = STORED[entry.dtype]
        if (start + begin) % dtype.itemsize:
            raise invalid(f"tensor {name} is not aligned to its {dtype.itemsize}-byte elements")
        out[name] = data[begin:end].view(dtype).reshape(entry.shape)
    return out
