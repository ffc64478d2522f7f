"""What the candidate may not leave behind in its child, and kbx's own work shielded from it.

Before the candidate is imported the child takes a ``Snapshot`` of the state that would act
inside kbx's own work.  ``quick`` (after each call, before kbx copies its outputs): torch's
function- and dispatch-mode stacks and thread-local dispatch keys, the kernels registered for the
operators kbx's handling runs, signal handlers, gc callbacks and ``sys``'s hooks, and threads
left running.  ``full`` (at the end of each case, before kbx writes its outputs): that, and the
namespaces kbx's code and its writer look names up in: ``builtins``, every ``kbx`` module and
class, torch's, its ``Tensor``'s and storages', the profiler's, ``json``'s.  The child reports the
case's op evidence first, then calls any change ``forbidden``: a mode, patch, hook or thread the
candidate leaves behind never turns into a pass, and what it computed still shows as its own.

``enter``/``leave`` bracket kbx's own tensor handling: no torch function or dispatch mode, no
Python dispatcher, no automatic garbage collection (no finalizer or gc callback of the
candidate's runs inside it).  Every function they and the checks call is bound here, before the
import; they are plain functions (a ``with`` would look ``__enter__`` up on a class).
"""

from __future__ import annotations

import _signal
import _thread
import builtins
import gc
import sys
from types import MappingProxyType, ModuleType, SimpleNamespace
from typing import Any

import torch

_C = torch._C
_DisableTorchFunction = _C.DisableTorchFunction  # an immutable type
_excluded = _C._dispatch_tls_is_dispatch_key_excluded
_exclude = _C._dispatch_tls_set_dispatch_key_excluded
_SHIELDED = (
    _C.DispatchKey.Python,
    _C.DispatchKey.PythonTLSSnapshot,
    _C.DispatchKey.PythonDispatcher,
)
_gc_enabled, _gc_disable, _gc_enable, _gc_referents = (
    gc.isenabled,
    gc.disable,
    gc.enable,
    gc.get_referents,
)
_GC_CALLBACKS = gc.callbacks  # the list the collector itself calls, whatever ``gc.callbacks`` names
_frames, _ident, _getsignal = sys._current_frames, _thread.get_ident, _signal.getsignal
_dump, _gettrace, _getprofile = _C._dispatch_dump, sys.gettrace, sys.getprofile
_tuple, _map, _id, _type, _callable = tuple, map, id, type, callable
_NSIG = _signal.NSIG
_fn_stack, _dispatch_stack = _C._len_torch_function_stack, _C._len_torch_dispatch_stack
_dispatch_mode, _tf_enabled = _C._get_dispatch_mode, _C._is_torch_function_enabled
_INFRA = (
    _C._TorchDispatchModeKey.FAKE,
    _C._TorchDispatchModeKey.PROXY,
    _C._TorchDispatchModeKey.FUNCTIONAL,
)
_included, _excluded_set = _C._dispatch_tls_local_include_set, _C._dispatch_tls_local_exclude_set
_raw = type(_included()).__dict__["raw_repr"]  # a key set's bits, read by the class's own method
_DTF_ENTER = vars(_DisableTorchFunction)["__enter__"]
_DTF_EXIT = vars(_DisableTorchFunction)["__exit__"]
_MISSING = object()

# The operators kbx's own tensor handling runs (``handling``) and their relatives: a kernel the
# candidate registers for one of them (``torch.library``) would run inside kbx's work.
HANDLED_OPS = frozenset(
    "alias as_strided clone contiguous copy_ detach empty empty_like empty_strided fill_ "
    "_local_scalar_dense new_empty resolve_conj resolve_neg select slice _to_copy to view "
    "view_as_real zero_ lift_fresh _reshape_alias reshape _unsafe_view".split()
)
# Library modules whose code kbx's writer and evidence run, and whose classes kbx's code meets:
# their functions, classes and submodules must stay those imported before the candidate.
LIBRARY_MODULES = (
    "torch", "torch._tensor", "torch.storage", "torch.overrides", "torch.autograd",
    "torch.autograd.profiler", "torch.autograd.profiler_util", "torch.profiler",
    "torch.profiler.profiler", "torch._C", "torch._C._profiler", "torch._C._autograd", "json",
    "json.encoder", "json.decoder", "hashlib", "hmac", "os", "io", "warnings", "contextlib",
    "functools", "itertools", "struct", "secrets", "traceback", "numpy", "safetensors",
)  # fmt: skip
LIBRARY_CLASSES = (
    torch.Tensor,
    torch.UntypedStorage,
    torch.TypedStorage,
    torch.storage._StorageBase,
)
# names the standard library caches on a class as it is used (copyreg, when a tensor is pickled
# or deep-copied): added, they are no one's patch
CACHES = frozenset({"__slotnames__"})
SYS_HOOKS = ("excepthook", "unraisablehook", "displayhook", "breakpointhook", "pycache_prefix")


def namespace(label: str, space: dict[str, Any], strict: bool) -> tuple[Any, ...]:
    """A dict (a module's, a class's, builtins') as it is now: its keys and each value's
    identity (the values kept alive).  ``strict``: any change counts (``changed``)."""
    return (label, space, strict, _tuple(space), _tuple(_map(_id, space.values())), dict(space))


def changed(entry: tuple[Any, ...]) -> list[str]:
    """What changed in a ``namespace``: with ``strict`` any entry; otherwise a function, class
    or module replaced or removed, or a function or class added (a module's data, or a module
    a library caches there, does not count: a plain module is not callable).  A submodule
    imported since is never a change."""
    label, space, strict, keys, ids, values = entry
    if _tuple(space) == keys and _tuple(_map(_id, space.values())) == ids:
        return []
    found = []
    for key in sorted({*keys, *space}, key=str):
        before, after = values.get(key, _MISSING), space.get(key, _MISSING)
        if before is after or (_type(after) is ModuleType and (before is _MISSING or not strict)):
            continue  # a submodule imported, or a library's module cached: no one's patch
        if before is _MISSING and key in CACHES:
            continue
        if strict or _counts(before) or _counts(after):
            found.append(f"{label}.{key}")
    return found


def _counts(value: Any) -> bool:
    """A value whose replacement changes behaviour: code, a class, a module."""
    return value is not _MISSING and (_callable(value) or isinstance(value, type | ModuleType))


def own_dict(cls: type) -> dict[str, Any]:
    """The class's own dict behind its read-only view (compared, never written)."""
    proxy: Any = vars(cls)
    return _gc_referents(proxy)[0] if _type(proxy) is MappingProxyType else proxy  # type: ignore[no-any-return]


def module_namespaces(
    prefix: str, strict: bool = True, but: str | None = None
) -> list[tuple[Any, ...]]:
    """Every loaded module named ``prefix`` or below it (``but`` those below that one), and each
    class defined in one."""
    found = []
    for name, module in sorted(sys.modules.items()):
        if but is not None and (name == but or name.startswith(but + ".")):
            continue
        if (name == prefix or name.startswith(prefix + ".")) and isinstance(module, ModuleType):
            found.append(namespace(name, vars(module), strict))
            for value in list(vars(module).values()):
                if isinstance(value, type) and value.__module__ == name:
                    label = f"{name}.{value.__qualname__}"
                    found.append(namespace(label, own_dict(value), strict))
    return found


def library_namespaces() -> list[tuple[Any, ...]]:
    found = [namespace("builtins", vars(builtins), strict=True)]
    for name in LIBRARY_MODULES:
        if isinstance(module := sys.modules.get(name), ModuleType):
            found.append(namespace(name, vars(module), strict=False))
    for cls in LIBRARY_CLASSES:
        found.append(namespace(f"{cls.__module__}.{cls.__qualname__}", own_dict(cls), True))
    return found


def modes() -> tuple[Any, ...]:
    """torch's mode stacks and thread-local dispatch keys, as comparable values."""
    return (
        _fn_stack(),
        _dispatch_stack(),
        _tuple(_dispatch_mode(key) is not None for key in _INFRA),
        _tf_enabled(),
        _raw(_included()),
        _raw(_excluded_set()),
    )


def handled_ops() -> tuple[str, ...]:
    names = _C._dispatch_get_all_op_names()
    return _tuple(
        sorted(
            n for n in names
            if n.startswith("aten::") and n[6:].split(".")[0] in HANDLED_OPS
        )
    )  # fmt: skip


def kernels(ops: tuple[str, ...]) -> tuple[str, ...]:
    """Where each operator's kernels were registered (a Python kernel names its file)."""
    return _tuple(_map(_dump, ops))


def hooks() -> tuple[Any, ...]:
    """Signal handlers, gc callbacks, ``sys``'s hooks and import hooks, by identity."""
    handlers = []
    for number in range(1, _NSIG):
        try:
            handlers.append(_id(_getsignal(number)))
        except (ValueError, OSError):
            handlers.append(0)
    return (
        _tuple(handlers),
        _tuple(_map(_id, _GC_CALLBACKS)),
        _tuple(_id(getattr(sys, name, None)) for name in SYS_HOOKS),
        _id(sys.meta_path),
        _tuple(_map(_id, sys.meta_path)),
        _id(sys.path_hooks),
        _tuple(_map(_id, sys.path_hooks)),
        _id(_gettrace()),
        _id(_getprofile()),
    )


def snapshot() -> SimpleNamespace:
    """The state before the candidate's import, and checks against it (``quick``, ``full``: each
    a list of what changed, in words), as functions over it."""
    threads, was_modes, ops = frozenset(_frames()), modes(), handled_ops()
    was_kernels, was_hooks = kernels(ops), hooks()
    spaces = library_namespaces() + module_namespaces("kbx")
    # triton.language is not: the interpreter's own stand-ins stay there after a launch; the
    # launch gate checks it instead (``interp.replaced``)
    spaces += module_namespaces("triton", strict=False, but="triton.language")

    def quick() -> list[str]:
        """What would act inside kbx's copies of a call's outputs."""
        found = []
        if modes() != was_modes:
            found.append("a torch function or dispatch mode (or dispatch key) left active")
        now = kernels(ops)
        if now != was_kernels:
            names = [op for op, a, b in zip(ops, was_kernels, now, strict=True) if a != b]
            found.append(f"a kernel registered for {', '.join(names[:4])}")
        if hooks() != was_hooks:
            found.append("a signal handler, gc callback or sys hook left installed")
        if left := set(_frames()) - threads - {_ident()}:
            found.append(f"{len(left)} thread(s) it started still running")
        return found

    def full() -> list[str]:
        """``quick``, and every watched namespace."""
        found = quick()
        names = [name for entry in spaces for name in changed(entry)]
        if names:
            more = f" and {len(names) - 6} more" if len(names) > 6 else ""
            found.append(f"replaced {', '.join(names[:6])}{more}")
        return found

    return SimpleNamespace(quick=quick, full=full)


def enter() -> tuple[Any, ...]:
    """Into the shield; returns what ``leave`` restores."""
    was = _tuple(_excluded(key) for key in _SHIELDED)
    collecting = _gc_enabled()
    _gc_disable()
    for key in _SHIELDED:
        _exclude(key, True)
    guard = _DisableTorchFunction()
    _DTF_ENTER(guard)
    return (was, collecting, guard)


def leave(state: tuple[Any, ...]) -> None:
    was, collecting, guard = state
    _DTF_EXIT(guard, None, None, None)
    for key, before in zip(_SHIELDED, was, strict=True):
        _exclude(key, before)
    if collecting:
        _gc_enable()
