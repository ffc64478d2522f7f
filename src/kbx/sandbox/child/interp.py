"""Gaps of Triton's CPU interpreter that kbx closes in the candidate's child process.

Only applied when the child runs with ``TRITON_INTERPRET=1``:
- a kernel body is Triton only (``triton_only``): the interpreter runs it as plain Python, so a
  body that reaches Python outside ``triton.language`` (a helper function, NumPy, torch, the
  loaded block's NumPy array behind ``.handle``) would compute outside Triton; compiled for the
  GPU it would not build.  The launch gate (``launches``) refuses such a launch as ``no_triton``;
- the interpreter's own code is Triton's and NumPy's as imported (``interpreter_changes``): it
  looks its builder's methods and NumPy's functions up as it runs, so one the candidate rebinds
  for the length of its call (a store that computes, ``numpy.multiply``) would run inside every
  body, and be gone before the case-end check (``pristine``); such a launch is ``no_triton``;
- arguments stay where they are: on the CPU the interpreter's copies of its arguments to the host
  (and back) are the arguments themselves, so a launch runs no torch operation of its own;
- multi-config autotuning needs a GPU to benchmark configurations; on the CPU every configuration
  computes the same result, so the first one is kept;
- libdevice functions (``extern_elementwise``) are computed by ``kbx.sandbox.child.libdevice``;
- ``tl.device_print`` prints nothing (``discarded_print``);
- a kernel that reads a non-constexpr global fails as it would when compiled for the GPU;
- Python float arguments are float32 scalars, as on the GPU (the interpreter keeps doubles);
- ``tl.maximum`` / ``tl.minimum`` of floats return the non-NaN operand, as compiled code does
  (the interpreter propagates NaN, so a clamp that turns NaN into a number would pass on the CPU
  and fail on the GPU: docs/design/throughput.md, Correctness findings).
"""

from __future__ import annotations

import builtins
import dis
import functools
import importlib
import math
import opcode
import os
import sys
import types
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import torch
from triton.language.core import is_builtin

from kbx.sandbox.child import pristine

EXTRA = "triton.language.extra"
# Python's builtins a compiled Triton kernel may name (triton's code generator's own list)
KERNEL_BUILTINS = (
    "len", "list", "range", "float", "int", "isinstance", "getattr", "hasattr", "print",
    "min", "max",
)  # fmt: skip
REFUSED_ATTRIBUTES = frozenset({"handle"})  # the interpreter's NumPy value behind a tl.tensor
_OPS = opcode.opmap
_CACHES = getattr(opcode, "_inline_cache_entries", [0] * 256)
_EXTENDED_ARG, _CACHE = _OPS["EXTENDED_ARG"], _OPS.get("CACHE", -1)
_GLOBAL_SHIFT = 1 if sys.version_info >= (3, 11) else 0
_ATTR_SHIFT = 1 if sys.version_info >= (3, 12) else 0
_LOAD_GLOBALS = frozenset(_OPS[n] for n in ("LOAD_GLOBAL", "LOAD_NAME") if n in _OPS)
_ATTRS = frozenset(_OPS[n] for n in ("LOAD_ATTR", "LOAD_METHOD") if n in _OPS)
_NAMED = frozenset(_OPS[n] for n in ("STORE_ATTR", "DELETE_ATTR") if n in _OPS)
_REFUSED_OPS = {
    _OPS[n]: why
    for n, why in (
        ("IMPORT_NAME", "an import"), ("STORE_GLOBAL", "a global's assignment"),
        ("DELETE_GLOBAL", "a global's deletion"), ("LOAD_DEREF", "a closure's variable"),
        ("LOAD_CLASSDEREF", "a closure's variable"),
    )
    if n in _OPS
}  # fmt: skip
_type, _id, _vars, _getattr, _tuple, _int = type, id, vars, getattr, tuple, int
_Code, _Module, _Function = types.CodeType, types.ModuleType, types.FunctionType
_BUILTINS = vars(builtins)


class GlobalsAsAttributes:
    """A module's globals dict seen as attributes, so the interpreter's patch scope can swap
    (and later restore) a libdevice function imported by name."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        object.__setattr__(self, "_ns", namespace)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._ns[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self._ns[name] = value

    def __delattr__(self, name: str) -> None:
        del self._ns[name]


PLAIN_VALUES = (bool, int, float, complex, str, bytes, list, tuple, dict, set)


def reject_plain_globals(fn: Any) -> None:
    """The GPU compiler lets a kernel read only constexpr globals (plus modules, kernels, dtypes);
    the interpreter reads any.  Reject the usual mistake, a plain Python constant, on the CPU too,
    so the CPU verdict is the GPU's (compile_failed)."""
    from triton.runtime.errors import InterpreterError

    for name in fn.__code__.co_names:
        value = fn.__globals__.get(name)
        if isinstance(value, PLAIN_VALUES) or type(value).__module__ == "torch":
            raise InterpreterError(
                f"Cannot access global variable {name} from within @jit'ed function: "
                f"Triton kernels can only read globals made with tl.constexpr(...)"
            )


def rules(codes: list[Any] | None = None) -> SimpleNamespace:
    """What a kernel body may name, gathered before the candidate is imported: the objects of
    ``triton.language`` (by identity), its classes, the kernel classes, the builtins a compiled
    kernel may call, and Triton's own code objects (``codes``: else found by a gc walk)."""
    import triton.language  # noqa: F401 - its submodules below
    from triton.runtime import interpreter, jit

    for name in (f"{EXTRA}.libdevice", f"{EXTRA}.cuda.libdevice"):
        importlib.import_module(name)
    modules = [
        m for n, m in sorted(sys.modules.items())
        if (n == "triton.language" or n.startswith("triton.language.")) and _type(m) is _Module
    ]  # fmt: skip
    values = [v for m in modules for v in list(vars(m).values())]
    wrappers = (getattr(jit, "TensorWrapper", None), getattr(jit, "TensorDescriptor", None))
    codes = codes if codes is not None else triton_codes()
    classes = [v for v in values if isinstance(v, type) and v.__module__.startswith("triton.")]
    spaces = [vars(m) for m in modules] + [own_dict(c) for c in classes]
    # the interpreter copies its own module's globals into the modules of the kernels it
    # rewrites, Triton's own device functions' included
    members = [v for space in [*spaces, vars(interpreter)] for v in list(space.values())]
    return SimpleNamespace(
        kept=(modules, values, codes, members),  # identities stay unique while these live
        watched=interpreter_namespaces(interpreter),
        codes=frozenset(_id(c) for c in codes),
        spaces=spaces,
        ids=frozenset(_id(v) for v in [*modules, *values, *members]),
        classes=frozenset(v for v in values if isinstance(v, type)),
        kernels=frozenset({interpreter.InterpretedFunction, jit.JITFunction}),
        wrappers=frozenset(c for c in wrappers if c is not None),
        builtins=frozenset(_id(_BUILTINS[n]) for n in KERNEL_BUILTINS),
        semantic=_id(getattr(interpreter, "interpreter_semantic", None)),
        math=math,
        plain=frozenset({bool, int, float, complex, str, type(None), torch.dtype}),
        numpy_scalar=_numpy_scalar_types(),
    )


# library modules whose names the interpreter's code (and NumPy's own) looks up as it runs, each
# with its submodules, besides those the interpreter's module names (``interpreter_namespaces``)
INTERPRETER_LIBRARIES = ("numpy", "inspect", "triton.runtime.jit")


def interpreter_namespaces(interpreter: Any) -> tuple[Any, ...]:
    """What the interpreter's code finds as it runs a launch, as it is now (``pristine``'s
    entries): its module and each module it names (but ``triton.language``'s, which ``replaced``
    checks) with their submodules, each class it and ``triton.runtime.jit`` define (any change
    counts: a property too), ``torch.Tensor``'s, ``builtins``, its builder's and semantic's own
    attributes and their classes (``__class__`` can be assigned)."""
    names = {
        v.__name__ for v in list(vars(interpreter).values())
        if _type(v) is _Module and not v.__name__.startswith("triton.language")
    }  # fmt: skip
    names.discard("triton")  # the package: its runtime modules are named below
    names.update(INTERPRETER_LIBRARIES)
    names.add(interpreter.__name__)
    entries = [
        pristine.namespace(n, _vars(m), strict=False)
        for n, m in sorted(sys.modules.items())
        if _type(m) is _Module and any(n == p or n.startswith(p + ".") for p in names)
    ]
    for module in (interpreter, sys.modules["triton.runtime.jit"]):
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == module.__name__:
                entries.append(pristine.namespace(value.__qualname__, own_dict(value), strict=True))
    # the interpreter calls a tensor argument's methods (``data_ptr``) inside the launch, and
    # Python's builtins (``print`` becomes ``tl.static_print`` as it patches the language)
    entries.append(pristine.namespace("torch.Tensor", own_dict(torch.Tensor), strict=True))
    entries.append(pristine.namespace("builtins", _vars(builtins), strict=True))  # not a copy
    instances = {"interpreter_builder": interpreter.interpreter_builder}
    instances["interpreter_semantic"] = interpreter.interpreter_semantic
    for label, instance in instances.items():
        entries.append(pristine.namespace(label, _vars(instance), strict=False))
        entries.append(pristine.namespace(f"{label}'s class", {"": _type(instance)}, strict=True))
    return tuple(entries)


def interpreter_changes(rules: Any) -> list[str]:
    """The interpreter's namespaces changed since ``rules`` (``interpreter_namespaces``)."""
    return [name for entry in rules.watched for name in pristine.changed(entry)]


def triton_root() -> str:
    import triton

    return os.path.dirname(os.path.realpath(triton.__file__)) + os.sep


def triton_codes() -> list[Any]:
    """Every code object of Triton's own functions alive now, nested ones included (the
    interpreter makes its stand-ins for ``triton.language`` from them during launches)."""
    import gc

    root = triton_root()
    found: list[Any] = []
    files: dict[str, bool] = {}
    for obj in gc.get_objects():
        if _type(obj) is not _Function:
            continue
        name = obj.__code__.co_filename
        if name not in files:
            files[name] = os.path.realpath(name).startswith(root)
        if files[name]:
            todo = [obj.__code__]
            while todo:
                code = todo.pop()
                found.append(code)
                todo.extend(c for c in code.co_consts if _type(c) is _Code)
    return found


def own_dict(cls: type) -> dict[str, Any]:
    """A class's own dict behind its read-only view (read, never written)."""
    import gc

    return gc.get_referents(vars(cls))[0]  # type: ignore[no-any-return]


def triton_own(value: Any, rules: Any) -> bool:
    """Whether ``value`` is Triton's own: an object of ``triton.language`` (or of its
    interpreter) as imported, or a function whose code is Triton's, or a partial of one (the
    interpreter's stand-ins)."""
    if _id(value) in rules.ids:
        return True
    if _type(value) is functools.partial:
        return triton_own(value.func, rules)
    return _type(value) is _Function and _id(value.__code__) in rules.codes


def replaced(rules: Any) -> list[str]:
    """The names of ``triton.language``'s modules and classes that hold what neither Triton
    put there nor a body may name: what the candidate put there would run inside every kernel
    body (a function, a property), or inside the interpreter as it patches the language for a
    launch (an object whose class answers any attribute)."""
    found = []
    for space in rules.spaces:
        for key, value in list(space.items()):
            if _id(value) in rules.ids or _type(value) in _DATA:
                continue  # as imported, or data nothing calls into (Python's warning registry)
            if foreign(value, rules) or judge(value, rules) is not None:
                found.append(key)
    return found


# containers of these exact types run no code when the interpreter reads the language's members
_DATA = frozenset({dict, list, set, frozenset})


def foreign(value: Any, rules: Any) -> bool:
    """A callable (not a class) or a descriptor (a property: its getter runs when a body reads
    the attribute) that is neither Triton's own nor a C function."""
    if isinstance(value, type) or triton_own(value, rules):
        return False
    if not callable(value) and not _descriptor(value):
        return False
    return _type(value) in (_Function, types.MethodType) or not _is_builtin(value)


# read by type's own slots, never through a metaclass of the candidate's
_MRO, _CLASS_DICT = vars(type)["__mro__"].__get__, vars(type)["__dict__"].__get__


def _descriptor(value: Any) -> bool:
    """Whether ``value``'s class (or a base) defines ``__get__`` (no candidate code runs)."""
    return any("__get__" in _CLASS_DICT(c) for c in _MRO(_type(value)))


def _is_builtin(value: Any) -> bool:
    """A C function or slot wrapper (Python's or an extension's), which a candidate cannot make."""
    return _type(value).__name__ in (
        "builtin_function_or_method",
        "wrapper_descriptor",
        "method_descriptor",
        "getset_descriptor",
        "member_descriptor",
        "classmethod_descriptor",
    )


def _numpy_scalar_types() -> frozenset[type]:
    import numpy as np

    return frozenset(
        t for t in vars(np).values() if isinstance(t, type) and issubclass(t, np.generic)
    )


def instructions(code: Any) -> list[tuple[int, int]]:
    """(opcode, argument) of each instruction of ``code``, caches and EXTENDED_ARG folded."""
    raw = code.co_code
    found: list[tuple[int, int]] = []
    extended, i, n = 0, 0, len(raw)
    while i < n:
        op, arg = raw[i], raw[i + 1] | extended
        i += 2
        if op == _EXTENDED_ARG:
            extended = arg << 8
            continue
        extended = 0
        if op != _CACHE:
            found.append((op, arg))
            i += 2 * _CACHES[op]
    return found


_NAME_READERS = frozenset({"getattr", "hasattr"})
_CALLS = frozenset(_OPS[n] for n in ("PRECALL", "CALL") if n in _OPS)
_LOAD_CONST = _OPS["LOAD_CONST"]
_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)
_HAVE_ARGUMENT = dis.HAVE_ARGUMENT
_stack_effect = dis.stack_effect  # C (``_opcode``), bound before the candidate's import
_READ_NAMES: dict[Any, tuple[str | None, ...]] = {}  # per code object (``named_by_builtin``)
READ_NAMES_KEPT = 4096


def named_by_builtin(code: Any) -> tuple[str | None, ...]:
    """The attribute name of each ``getattr``/``hasattr`` a code object calls by its global
    name: a string constant, else None (a name made at run time, or the builtin not called
    there and then).  A constant name is an attribute the body names like ``x.handle``.

    Read with this module's ``instructions`` and functions bound at its import, never with
    ``dis``'s Python functions, which a candidate can rebind for the length of a launch; kept
    per code object in a table of this module's (a frozen copy has its own, ``bound``): code
    objects compare by their contents, so the same instructions give the same names, and a
    kernel launched in a loop is checked at every launch."""
    found = _READ_NAMES.get(code)
    if found is not None:
        return found
    names, consts = code.co_names, code.co_consts
    listed = instructions(code)
    read: list[str | None] = []
    for i, (op, arg) in enumerate(listed):
        if op not in _LOAD_GLOBALS:
            continue
        if names[arg >> _GLOBAL_SHIFT if op == _OPS["LOAD_GLOBAL"] else arg] not in _NAME_READERS:
            continue
        name: str | None = None
        depth = 0
        for j in range(i + 1, len(listed)):
            after, value = listed[j]
            if after in _CALLS and depth == value:
                before, index = listed[j - 1]
                if before == _LOAD_CONST and _type(consts[index]) is str:
                    name = consts[index]
                break
            if after in _JUMPS:
                break  # a branch between the builtin and its call: not followed
            depth += _stack_effect(after, value if after >= _HAVE_ARGUMENT else None)
            if depth < 0:
                break  # the builtin itself consumed by something other than its call
        read.append(name)
    found = tuple(read)
    if len(_READ_NAMES) >= READ_NAMES_KEPT:
        _READ_NAMES.clear()
    _READ_NAMES[code] = found
    return found


def body_names(code: Any) -> tuple[list[list[str]], list[str], list[str]]:
    """A code object's global name chains (``tl.extra.cuda.libdevice.tanh``), its attribute
    names, and what it does that a kernel may not (an import, a global's assignment), nested
    code included."""
    chains: list[list[str]] = []
    attributes: list[str] = []
    refused: list[str] = []
    todo = [code]
    while todo:
        current = todo.pop()
        names = current.co_names
        chain: list[str] | None = None
        for op, arg in instructions(current):
            if op in _LOAD_GLOBALS:
                chain = [names[arg >> _GLOBAL_SHIFT if op == _OPS["LOAD_GLOBAL"] else arg]]
                chains.append(chain)
                continue
            if op in _ATTRS:
                name = names[arg >> _ATTR_SHIFT if op == _OPS["LOAD_ATTR"] else arg]
                attributes.append(name)
                if chain is not None:
                    chain.append(name)
                continue
            chain = None
            if op in _NAMED:
                attributes.append(names[arg])
            elif op in _REFUSED_OPS:
                refused.append(_REFUSED_OPS[op])
        for name in named_by_builtin(current):
            if name is None:
                refused.append("getattr or hasattr with a name made at run time")
            else:
                attributes.append(name)
        todo.extend(c for c in current.co_consts if _type(c) is _Code)
    return chains, attributes, refused


def resolve(
    chain: list[str], namespace: dict[str, Any], builtins: dict[str, Any]
) -> tuple[str, Any]:
    """The object a global name chain reaches, following attributes of modules only."""
    head = chain[0]
    if head in namespace:
        value = namespace[head]
    elif head in builtins:
        value = builtins[head]
    else:
        return head, None
    shown = head
    for name in chain[1:]:
        if _type(value) is not _Module:
            break
        value = _vars(value).get(name)
        shown += "." + name
    return shown, value


def judge(value: Any, rules: Any, depth: int = 0) -> str | None:
    """Why a kernel may not name ``value`` (None: it may)."""
    t = _type(value)
    if _id(value) in rules.ids or _id(value) in rules.builtins or _id(value) == rules.semantic:
        return None
    if t in rules.plain or t in rules.numpy_scalar:
        return None
    if t in rules.classes:
        return within(value, rules, depth)
    if t in rules.kernels:
        return None  # a device function: its own body is checked (``bodies``)
    if triton_own(value, rules):
        return None
    if t is _Module:
        return (
            None
            if value is rules.math or value.__name__.startswith("triton.language")
            else (f"the module {value.__name__}")
        )
    if t is types.BuiltinFunctionType and _getattr(value, "__self__", None) is rules.math:
        return None  # math on constants, folded at compile time
    if t is tuple and depth < 4:
        return next((why for v in value if (why := judge(v, rules, depth + 1))), None)
    return f"a {t.__name__}"


def within(value: Any, rules: Any, depth: int) -> str | None:
    """Why a kernel may not name an instance of a ``triton.language`` class: what it holds (a
    ``tl.constexpr`` around a Python function runs that function when the body calls it)."""
    held = _getattr(value, "__dict__", None)
    if _type(held) is not dict or not held:
        return None
    if depth >= 4:
        return f"a {_type(value).__name__} nested too deep"
    for v in list(held.values()):
        if why := judge(v, rules, depth + 1):
            return f"{why} in a {_type(value).__name__}"
    return None


def builtins_of(fn: Any) -> dict[str, Any]:
    """The builtins a function's body finds (its globals' ``__builtins__``)."""
    found = fn.__globals__.get("__builtins__", _BUILTINS)
    return found if _type(found) is dict else _vars(found)


def kernel_problems(fn: Any, rules: Any) -> list[str]:
    """What a kernel function's body reaches that is not Triton."""
    chains, attributes, refused = body_names(fn.__code__)
    problems = list(dict.fromkeys(refused))
    for name in attributes:
        if name in REFUSED_ATTRIBUTES or (name.startswith("__") and name.endswith("__")):
            problems.append(f"the attribute .{name}")
    for chain in chains:
        shown, value = resolve(chain, fn.__globals__, builtins_of(fn))
        if value is None and shown == chain[0]:
            continue  # an unknown name fails as the GPU compiler would
        if why := judge(value, rules):
            problems.append(f"{shown} ({why})")
    return problems


def bodies(
    fn: Any, rules: Any, rewrite: Callable[[Any], Any], handed: tuple[Any, ...] = ()
) -> list[Any]:
    """The kernel's body and those of the device functions it reaches (``handed``: the launch's
    arguments), recursively: each as the interpreter runs it (``rewrite``: Triton's, which
    caches what it made) and each device function's raw ``.fn`` too (the interpreter's
    reductions and scans call a combine function's ``.fn``, which a candidate can swap after
    ``triton.jit``)."""
    found, seen = [fn], {_id(fn)}
    todo: list[tuple[Any, list[Any]]] = [(fn, list(handed))]
    while todo:
        current, values = todo.pop()
        chains, _, _ = body_names(current.__code__)
        values += [resolve(c, current.__globals__, builtins_of(current))[1] for c in chains]
        values += [*(current.__defaults__ or ()), *(current.__kwdefaults__ or {}).values()]
        for kernel in device_functions(values, rules):
            for inner in (rewrite(kernel), _vars(kernel)["fn"]):
                if _type(inner) is _Function and _id(inner) not in seen:
                    seen.add(_id(inner))
                    found.append(inner)
                    todo.append((inner, []))
    return found


def device_functions(values: list[Any], rules: Any, depth: int = 0) -> list[Any]:
    """The device functions among ``values``: named there, or held in a tuple or an instance of
    a ``triton.language`` class (a ``tl.constexpr``), as ``judge`` lets them through."""
    found = []
    for value in values:
        t = _type(value)
        if t in rules.kernels and _type(_vars(value).get("fn")) is _Function:
            found.append(value)
        elif t is tuple and depth < 4:
            found += device_functions(list(value), rules, depth + 1)
        elif t in rules.classes and depth < 4:
            held: Any = _getattr(value, "__dict__", None)
            if _type(held) is dict:
                found += device_functions(list(held.values()), rules, depth + 1)
    return found


def argument_problems(args: tuple[Any, ...], kwargs: dict[str, Any], rules: Any) -> list[str]:
    """Arguments a launch may not take: anything but plain tensors, numbers, dtypes, kernels."""
    problems = []
    for position, value in [*enumerate(args), *kwargs.items()]:
        if _type(value) is torch.Tensor:
            continue
        why = wrapped(value, rules) if _type(value) in rules.wrappers else judge(value, rules)
        if why is not None:
            problems.append(f"argument {position} ({why})")
    return problems


def wrapped(value: Any, rules: Any) -> str | None:
    """Why a tensor wrapper (``TensorWrapper``, ``TensorDescriptor``) may not be an argument:
    what it holds besides tensors (the interpreter calls its base's methods inside the launch)."""
    for held in list(_vars(value).values()):
        if _type(held) is torch.Tensor:
            continue
        if (why := judge(_tuple(held) if _type(held) is list else held, rules)) is not None:
            return f"{why} in a {_type(value).__name__}"
    return None


def default_problems(fn: Any, rules: Any) -> list[str]:
    """Parameter defaults a body may not be handed: the interpreter fills in the defaults of
    the parameters a launch leaves out, which no argument check sees."""
    defaults = [*enumerate(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).items()]
    return [f"default {position} ({why})" for position, v in defaults if (why := judge(v, rules))]


def checked(
    kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any], rules: Any, rewrite: Any
) -> tuple[Any, str | None]:
    """The function a launch of ``kernel`` runs (its body as the interpreter rewrote it), and
    why the launch is not Triton work (None: it is): a body, or a device function's, that
    reaches Python outside ``triton.language``, or an argument of another kind."""
    source: Any = _vars(kernel).get("fn") if _type(kernel) in rules.kernels else None
    if _type(source) is not _Function:
        return None, f"a launch of a {_type(kernel).__name__}, not a Triton kernel"
    if changed := replaced(rules):
        return (
            None,
            f"triton.language's {', '.join(sorted(set(changed))[:4])} replaced by candidate code",
        )
    if changed := interpreter_changes(rules):
        return None, f"the interpreter's {', '.join(changed[:4])} replaced by candidate code"
    fn = rewrite(kernel)
    if _type(fn) is not _Function:
        return None, f"kernel {source.__name__} runs a {_type(fn).__name__}"
    handed = {k: v for k, v in kwargs.items() if k != "grid"}
    problems = argument_problems(args, handed, rules)
    for body in bodies(fn, rules, rewrite, (*args, *handed.values())):
        problems += [f"{body.__name__}: {p}" for p in default_problems(body, rules)]
        problems += [f"{body.__name__}: {p}" for p in kernel_problems(body, rules)]
    if not problems:
        return fn, None
    more = f" and {len(problems) - 4} more" if len(problems) > 4 else ""
    shown = "; ".join(problems[:4]) + more
    return fn, f"kernel {source.__name__} reaches Python outside triton.language: {shown}"


SETTLED: list[bool] = []


def grid_shape(
    kernel: Any, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any], rewrite: Any
) -> Any:
    """What a grid function gives a launch of ``kernel``, over the launch's arguments bound to
    the kernel's parameters as they are (as compiled Triton hands them to it), computed before
    the launch gate's check: the grid function is the candidate's code, and inside the launch
    the interpreter would call it after the check, where what it changes (an argument, a device
    function, an interpreter's cache) would reach the body unread.  A tuple of ints, which the
    launch then uses as it is."""
    import inspect

    fn = rewrite(kernel)
    if _type(fn) is not _Function:
        return grid  # refused by the check
    spec = inspect.getfullargspec(fn)
    meta = inspect.getcallargs(fn, *args, **{k: v for k, v in kwargs.items() if k in spec.args})
    return _tuple(_int(n) for n in grid(meta))


def settle() -> None:
    """One launch of a one-element kernel of kbx's own (once a process: the fork server's is
    its children's): the interpreter's first launch leaves entries of its own in ``tl.tensor``'s
    class (``__repr__``, ``__index__``...), which must be in place before the child's snapshot
    (``pristine``), not appear during the candidate's."""
    import triton
    import triton.language as tl

    if SETTLED:
        return
    SETTLED.append(True)

    def copy_one(src_ptr, dst_ptr):  # type: ignore[no-untyped-def]
        tl.store(dst_ptr, tl.load(src_ptr))

    x = torch.zeros(1)
    triton.jit(copy_one)[(1,)](x, x)


def nan_ignoring_min_max(builder: Any) -> None:
    """``tl.maximum(x, y)`` (propagate_nan=NONE, the default) lowers to LLVM's maxnum, which
    returns the other operand when one is NaN (PTX ``max.f32``): numpy's fmax, not maximum."""
    import numpy as np

    builder.create_maxnumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.fmax)
    builder.create_minnumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.fmin)


def in_place_arguments(interpreter: Any) -> None:
    """On the CPU the interpreter's host copies of a launch's arguments are the arguments: no
    copy to make, none to copy back, and so no torch operation inside a launch."""

    def to_host(self: Any, args_dev: Any, kwargs: Any) -> Any:
        return list(args_dev), dict(kwargs)

    def back(self: Any, args_dev: Any, args_hst: Any, kwargs: Any, kwargs_hst: Any) -> None:
        return None

    interpreter.GridExecutor._init_args_hst = to_host
    interpreter.GridExecutor._restore_args_dev = back


def as_index(block: Any) -> int:
    """A one-element block as a Python index, as Triton 3.7's interpreter reads it: 3.6's takes
    ``int`` of the one-element array itself, which NumPy 2.4 refuses for arrays with a dimension
    (a loop bound such as ``range(a, tl.minimum(b, c))`` then fails)."""
    return int(block.handle.data.squeeze())


def discarded_print(self: Any, prefix: str, hex: bool, values: Any, is_signed: Any) -> None:
    """``tl.device_print`` in the interpreter prints nothing: its text, read back through a
    ``sys.stdout`` or a descriptor of the candidate's, would carry a kernel's data to the host
    with no torch operation to record it (``tests/exploits/kernel_print_readout``)."""


def apply(extern: Callable[..., Any] | None = None) -> None:
    """Patch the interpreter; ``extern`` (a sealed function: ``launches``) computes libdevice
    calls, else ``libdevice.extern_elementwise`` directly."""
    from triton.runtime import autotuner, interpreter

    from kbx.sandbox.child.libdevice import extern_elementwise

    compute = extern if extern is not None else (lambda self, *args: extern_elementwise(*args))
    interpreter.InterpreterBuilder.create_extern_elementwise = compute  # type: ignore[method-assign]
    in_place_arguments(interpreter)
    original_patch_lang = interpreter._patch_lang

    def patch_lang(fn: Any) -> Any:
        """Also route libdevice calls to the interpreter: the CUDA module's builtins, and the
        backend-neutral stubs of ``triton.language.extra.libdevice`` (which the GPU compiler
        resolves to the CUDA ones), whether used as modules or imported by name."""
        reject_plain_globals(fn)
        scope = original_patch_lang(fn)
        scope.set_attr(importlib.import_module("triton.language").tensor, "__index__", as_index)
        builder = interpreter.interpreter_builder
        cuda = importlib.import_module(f"{EXTRA}.cuda.libdevice")
        generic = importlib.import_module(f"{EXTRA}.libdevice")
        builtins = {n: m for n, m in vars(cuda).items() if is_builtin(m)}
        for name, member in builtins.items():
            interpreter._patch_attr(cuda, name, member, builder, scope)
            if hasattr(generic, name):
                interpreter._patch_attr(generic, name, member, builder, scope)
        names = GlobalsAsAttributes(fn.__globals__)
        for name, value in list(fn.__globals__.items()):
            module = getattr(value, "__module__", None) or ""
            if callable(value) and module.startswith(EXTRA) and value.__name__ in builtins:
                interpreter._patch_attr(names, name, builtins[value.__name__], builder, scope)
        return scope

    interpreter._patch_lang = patch_lang
    original_cvt = interpreter._implicit_cvt

    def float32_scalars(arg: Any) -> Any:
        """A Python float argument is a float32 scalar on the GPU; the interpreter would keep it
        as a double and compute scalar arithmetic more precisely than the GPU does."""
        if isinstance(arg, float):
            import numpy as np
            import triton.language as tl

            handle = interpreter.TensorHandle(np.array([arg], dtype=np.float32), tl.float32)
            return tl.tensor(handle, tl.float32)
        return original_cvt(arg)

    interpreter._implicit_cvt = float32_scalars
    nan_ignoring_min_max(interpreter.InterpreterBuilder)
    interpreter.InterpreterBuilder.create_print = discarded_print  # type: ignore[method-assign]

    original_init = autotuner.Autotuner.__init__

    def init_first_config(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self.configs = self.configs[:1]

    autotuner.Autotuner.__init__ = init_first_config  # type: ignore[method-assign]
