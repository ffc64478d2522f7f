"""The schema of an output file's tree: the nested structure around a case's tensors (tuples,
lists, None, scalars, tensor references, and placeholders for what the file cannot hold), as the
child writes it in the safetensors metadata and the parent validates it before reading a single
tensor: node types, depth, node count and run count are bounded, and every tensor entry is named
exactly once (``outputs``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt
from pydantic import ValidationError as _ValidationError

from kbx.sandbox.wire.channel import explain, one_line

TREE_KEY = "kbx.tree"
META = "__metadata__"
KINDS = ("cases", "refill", "bench", "timed")
MAX_RUNS = 4
MAX_DEPTH = 16  # a run's own output is at depth 1
MAX_NODES = 4096  # over all runs: tensors, scalars, Nones and sequences
MAX_STR_CHARS = 256  # kbx's placeholders ("<object of type Foo>") are short
MAX_TREE_BYTES = 8 << 20
MAX_HEADER_BYTES = 16 << 20
INT_RANGE = (-(2**63), 2**64 - 1)
STORED = {"BOOL": torch.bool, "U8": torch.uint8, "I8": torch.int8, "I16": torch.int16}
STORED |= {"I32": torch.int32, "I64": torch.int64, "F16": torch.float16, "BF16": torch.bfloat16}
STORED |= {"F32": torch.float32, "F64": torch.float64}  # safetensors' names of the dtypes kept
DTYPES = frozenset(STORED.values())
COMPLEX = {torch.complex64: torch.float32, torch.complex128: torch.float64}


class OutputError(Exception):
    """An output file that is not what the child was to write, or outputs it cannot store."""


class _Node(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class TensorRef(_Node):
    t: Literal["tensor"]
    name: Annotated[str, Field(pattern=r"^t\d{1,4}$")]
    complex: bool = False  # stored as ``view_as_real``: a last dimension of 2


class Seq(_Node):
    t: Literal["tuple", "list"]
    items: Annotated[list[Node], Field(max_length=MAX_NODES)]


class NoneLeaf(_Node):
    t: Literal["none"]


class Bool(_Node):
    t: Literal["bool"]
    v: StrictBool


class Int(_Node):
    t: Literal["int"]
    v: Annotated[StrictInt, Field(ge=INT_RANGE[0], le=INT_RANGE[1])]


class Float(_Node):
    t: Literal["float"]
    v: StrictFloat


class Str(_Node):
    t: Literal["str"]
    v: Annotated[str, Field(max_length=MAX_STR_CHARS)]


class Complex(_Node):
    t: Literal["complex"]
    re: StrictFloat
    im: StrictFloat


class Unstorable(_Node):
    """What the child could not store, named for the judge (never a value): a tensor of a dtype
    or layout the file cannot hold (its dtype and shape), outputs nested too deep or too many,
    an int out of range, a string too long."""

    t: Literal["unstorable"]
    what: Annotated[str, Field(max_length=MAX_STR_CHARS)]
    dtype: Annotated[str, Field(max_length=64)] | None = None
    shape: Annotated[list[Annotated[StrictInt, Field(ge=0)]], Field(max_length=64)] | None = None


Leaf = TensorRef | NoneLeaf | Bool | Int | Float | Str | Complex | Unstorable
Node = Annotated[Leaf | Seq, Field(discriminator="t")]


class Tree(_Node):
    version: Literal[1]
    runs: Annotated[list[Node], Field(max_length=MAX_RUNS)]


Seq.model_rebuild()
Tree.model_rebuild()


def parse_tree(text: str | None) -> Tree:
    if text is None:
        raise OutputError(f"no {TREE_KEY} metadata")
    if len(text) > MAX_TREE_BYTES:
        raise OutputError(f"{TREE_KEY} of {len(text)} characters, over {MAX_TREE_BYTES}")
    try:
        return Tree.model_validate_json(text)
    except _ValidationError as exc:
        raise OutputError(one_line(f"bad {TREE_KEY}: {explain(exc)}")) from None


def check(tree: Tree) -> list[TensorRef]:
    """The tree's tensor references, after its depth and size are checked."""
    refs: list[TensorRef] = []
    stack: list[tuple[Any, int]] = [(node, 1) for node in tree.runs]
    count = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise OutputError(f"outputs of more than {MAX_NODES} nodes")
        if depth > MAX_DEPTH:
            raise OutputError(f"outputs nested deeper than {MAX_DEPTH}")
        if isinstance(node, Seq):
            stack.extend((item, depth + 1) for item in node.items)
        elif isinstance(node, TensorRef):
            refs.append(node)
    return refs
