"""kbx's own tensor handling in the candidate's child: fresh copies of the inputs for a call, a
call's outputs copied out, a refill written into the first call's buffers.

Everything here is bound when the module is imported, before any candidate: tensors are handled
with ``TensorBase``'s own C methods (an immutable type: neither kbx nor the candidate can replace
them, unlike ``torch.Tensor``'s), containers are told apart by their exact type and read with the
base types' own iterators, scalars are read with the base types' own slots.  So no method,
property, ``__class__``, ``__iter__`` or builtin of the candidate's runs while kbx copies, and
what the copies hold is what the candidate's call left.  The caller runs these inside the
recorder's harness range and ``pristine.shield`` (no mode, no dispatcher hook, no collection).
"""

from __future__ import annotations

from typing import Any

import numpy
import torch
import triton.language.core

_TB = torch._C.TensorBase
_Tensor = torch.Tensor
_clone, _detach, _copy, _cpu = _TB.clone, _TB.detach, _TB.copy_, _TB.cpu
_storage, _resizable = _TB.untyped_storage, vars(torch._C.StorageBase)["resizable"]
_is_cuda = _TB.__dict__["is_cuda"].__get__
_mro = type.__dict__["__mro__"].__get__
_type_name = type.__dict__["__name__"].__get__
_type, _tuple, _list, _dict, _id = type, tuple, list, dict, id
_tuple_iter, _list_iter, _dict_items = tuple.__iter__, list.__iter__, dict.items
_int, _float, _complex, _str, _bool = (
    int.__index__,
    float.__float__,
    complex.__complex__,
    str.__str__,
    bool,
)
SCALARS = (int, float, complex, str)
_NoneType = type(None)
_NUMPY_SCALAR, _bytes = numpy.generic, bytes
_CONSTEXPR = triton.language.core.constexpr
_object_attribute, _dict_get = object.__dict__["__getattribute__"], dict.get


def kind(x: Any) -> str:
    """``tensor``, ``tuple``, ``list``, ``dict``, ``scalar``, ``none``, ``subclass`` (a tensor
    subclass) or ``other``, from the object's exact type and its type's own MRO."""
    t = _type(x)
    if t is _Tensor:
        return "tensor"
    if t is _NoneType:
        return "none"
    mro = _mro(t)
    if _Tensor in mro or _TB in mro:
        return "subclass"
    for base, name in ((tuple, "tuple"), (list, "list"), (dict, "dict")):
        if base in mro:
            return name
    if t is bool or t in SCALARS or any(s in mro for s in SCALARS):
        return "scalar"
    return "other"


def elements(x: Any) -> Any:
    """The items of a tuple or list (any subclass), read by the base type's own iterator."""
    return _tuple_iter(x) if tuple in _mro(_type(x)) else _list_iter(x)


def scalar(x: Any) -> Any:
    """A scalar as a value of its exact base type (a subclass's methods never run)."""
    mro = _mro(_type(x))
    if bool in mro:
        return x is True
    if int in mro:
        return _int(x)
    if float in mro:
        return _float(x)
    if complex in mro:
        return _complex(x)
    return _str(x)


def fresh(x: Any) -> Any:
    """Fresh copies of every tensor in nested tuples, lists and dicts of kbx's own making (the
    case's inputs)."""
    k = kind(x)
    if k == "tensor":
        return _clone(x)
    if k in ("tuple", "list"):
        return _type(x)(fresh(v) for v in elements(x))
    if k == "dict":
        return {key: fresh(v) for key, v in _dict_items(x)}
    return x


def fresh_arguments(args: Any, kwargs: Any) -> tuple[Any, dict[str, Any]]:
    return fresh(args), fresh(_dict(kwargs))


def placeholder(x: Any) -> str:
    if kind(x) == "subclass":
        return f"<tensor subclass {_type_name(_type(x))}>"
    return f"<object of type {_type_name(_type(x))}>"


def to_host(x: Any) -> Any:
    """Outputs as plain CPU tensors of kbx's own (fresh storage), tuples and scalars; anything
    else (a tensor subclass included) by a placeholder naming its type."""
    k = kind(x)
    if k == "tensor":
        t = _detach(x)
        return _cpu(t) if _is_cuda(t) else _clone(t)
    if k in ("tuple", "list"):
        return _tuple(to_host(v) for v in elements(x))
    if k == "none":
        return None
    if k == "scalar":
        return scalar(x)
    return placeholder(x)


def leaves(x: Any) -> list[Any]:
    """The tensors of nested tuples and lists (of kbx's own making), in order."""
    k = kind(x)
    if k == "tensor":
        return [x]
    if k in ("tuple", "list"):
        return [t for v in elements(x) for t in leaves(v)]
    return []


def argument_values(args: Any, kwargs: Any, numbers: set[Any]) -> int:
    """How many values a launch hands its kernel: each argument, and each item of a tuple or
    list (nested ones too) in place of the container; the numbers among them (Python's,
    NumPy's, a ``tl.constexpr``'s) are added to ``numbers``, by value.  Host data handed to
    kernels this way in bulk is no kernel's work (``launches.count_values``)."""
    top = (*elements(args), *elements(_tuple(kwargs.values())))
    return sum(values(v, 0, numbers) for v in top)


def values(x: Any, depth: int, numbers: set[Any]) -> int:
    kind_of = _type(x)
    mro = _mro(kind_of)
    if depth > 8:  # nested deeper than any kernel takes: counted as too many
        return 1 << 20
    if tuple in mro or list in mro:
        return sum(values(v, depth + 1, numbers) for v in elements(x))
    if kind_of is _CONSTEXPR:  # Triton's own class, exactly: its value, read from its dict
        return values(_dict_get(_object_attribute(x, "__dict__"), "value"), depth + 1, numbers)
    if bool not in mro and (int in mro or float in mro or complex in mro):
        numbers.add(scalar(x))
    elif _NUMPY_SCALAR in mro:
        numbers.add((_type_name(kind_of), _bytes(memoryview(x))))
    return 1


def restore(dst: Any, src: Any) -> None:
    """Copy ``src``'s tensors into ``dst``'s, leaf by leaf (kbx's own buffers and inputs)."""
    for d, s in zip(leaves(dst), leaves(src), strict=True):
        _copy(d, s)


def host_memory(x: Any) -> int:
    """How many of the output's tensors view memory torch did not allocate (NumPy's, a
    buffer's, a DLPack capsule's: their storage cannot be resized).  A tensor with no storage (a
    sparse or nested layout) counts none here: kbx cannot store it (``outputs.storable``)."""
    k = kind(x)
    if k == "tensor":
        try:
            return 0 if _resizable(_storage(x)) else 1
        except (NotImplementedError, RuntimeError):
            return 0
    if k in ("tuple", "list"):
        return sum(host_memory(v) for v in elements(x))
    return 0
