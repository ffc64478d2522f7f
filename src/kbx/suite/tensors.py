"""Cases, argument trees and tensors as both sides of an evaluation handle them: fresh copies of a
case's inputs, its refill from another seed, outputs as plain tensors.

The trusted parent (references, expectations, baselines) and the candidate's child (``runner``)
both use these, so they live apart from the child's stages: importing them brings in no code of
the candidate's side.  A tree here is nested tuples and lists (any subclass; dicts too for
``clone``), anything else a leaf.  ``torch.utils._pytree`` gives other results: it keeps list and
tuple subclasses other than named tuples whole as leaves (their tensors would be shared between
copies, not copied) and walks into dicts where ``leaves`` and ``to_cpu`` do not.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch

from kbx.suite.task import Case, Inputs

REFILL_SEED = 7_919_000  # offset of the seed a correctness case is redrawn from for its refill


@dataclass(frozen=True)
class Unstored:
    """An output the child could not store, by what the judge needs to name it (never a value):
    a tensor of a dtype or layout kbx's output file cannot hold (with its dtype and shape),
    outputs nested too deep or too many, an int out of range, a string too long.  Here, in a
    module the child imports before the candidate, rather than beside the comparison that reads
    it: the child's writer makes it after the candidate's import."""

    what: str
    dtype: str | None = None
    shape: tuple[int, ...] | None = None


def refill_case(case: Case) -> Case:
    """The case drawn from another seed, whose inputs refill the first call's buffers."""
    return dataclasses.replace(case, seed=case.seed + REFILL_SEED)


def same_layout(a: Inputs, b: Inputs) -> bool:
    """Whether ``b`` fits ``a``'s buffers: the same tensor shapes, dtypes and devices, the same
    other arguments."""

    def layout(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            return ("tensor", tuple(x.shape), x.dtype, x.device)
        if isinstance(x, tuple | list):
            return tuple(layout(v) for v in x)
        return repr(x)

    return layout((a.args, dict(a.kwargs))) == layout((b.args, dict(b.kwargs)))


def full_fp32() -> None:
    """TF32 off for cuBLAS and cuDNN: float32 contractions in full float32, as the tasks'
    precision contracts say (docs/design/tolerances.md).  Every process that runs references,
    baselines or candidates calls this."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def clone(x: Any) -> Any:
    """Fresh copies of every tensor in nested tuples, lists and dicts (keyword arguments: a
    shallow dict copy would share their tensors between copies and with the case itself)."""
    if isinstance(x, torch.Tensor):
        return x.clone()
    if isinstance(x, tuple | list):
        return type(x)(clone(v) for v in x)
    if isinstance(x, dict):
        return {k: clone(v) for k, v in x.items()}
    return x


def fresh_arguments(inputs: Inputs) -> tuple[Any, dict[str, Any]]:
    """Copies of a case's positional and keyword arguments, every tensor its own."""
    return clone(inputs.args), clone(dict(inputs.kwargs))


def leaves(x: Any) -> list[Any]:
    """The tensors of nested tuples and lists, in order."""
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, tuple | list):
        return [t for v in x for t in leaves(v)]
    return []


def restore(dst: Any, src: Any) -> None:
    """Copy ``src``'s tensors into ``dst``'s, leaf by leaf (the same tree of the same shapes)."""
    for d, s in zip(leaves(dst), leaves(src), strict=True):
        d.copy_(s)


def subclass(x: Any) -> str | None:
    """The placeholder of a tensor subclass: an output must be a plain tensor (a subclass runs
    its own code when kbx copies it, inside kbx's harness)."""
    if isinstance(x, torch.Tensor) and type(x) is not torch.Tensor:
        return f"<tensor subclass {type(x).__name__}>"
    return None


def items(x: tuple[Any, ...] | list[Any]) -> Any:
    """The elements of an output tuple or list, read by the base type's own iterator: a
    subclass's ``__iter__`` is candidate code, and kbx copies outputs inside its harness range,
    where torch work is not the candidate's (``tests/exploits/iter_compute``)."""
    return tuple.__iter__(x) if isinstance(x, tuple) else list.__iter__(x)


def to_cpu(x: Any) -> Any:
    """Outputs as plain CPU tensors and scalars: anything else is reported by its type name."""
    if (name := subclass(x)) is not None:
        return name
    if isinstance(x, torch.Tensor):
        t = x.detach().as_subclass(torch.Tensor)
        # from the GPU .cpu() is already a new tensor of its own size (a second copy of a large
        # output cost ~0.1 s under the GPU lock); on the CPU it would be the candidate's own
        return t.cpu() if t.is_cuda else t.clone()
    if isinstance(x, tuple | list):
        return tuple(to_cpu(v) for v in items(x))
    if x is None or isinstance(x, bool | int | float | complex | str):
        return x
    return f"<object of type {type(x).__name__}>"


def detached(x: Any) -> Any:
    """Outputs as plain tensors (on their device) and scalars, like ``to_cpu`` otherwise."""
    if (name := subclass(x)) is not None:
        return name
    if isinstance(x, torch.Tensor):
        return x.detach().as_subclass(torch.Tensor)
    if isinstance(x, tuple | list):
        return tuple(detached(v) for v in items(x))
    return to_cpu(x)
