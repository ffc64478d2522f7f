"""An audit hook in the candidate's child: what candidate code may not do inside the process.

The sandbox (``confine``) keeps the child from the host; this keeps candidate code from kbx's
own code and evidence in the same process.  ``install`` adds a ``sys.addaudithook`` hook before
the candidate is imported; Python offers no way to remove one.

Trust goes by code identity, never by file name.  ``install`` records every code object that
exists then whose file lies in kbx's source, an installed package's folder or the standard
library (``trusted`` and ``system``); afterwards a code object joins only when the import
machinery runs it from such a file through a loader bound before the import (``Loading``): a
genuine ``SourceFileLoader`` or ``SourcelessFileLoader``, whose classes and helpers are those of
the install, reading a file no child can write.  Code compiled, ``exec``'d or unmarshalled
later, whatever its file name (a relative name, ``<frozen ...>``, a path in the standard library
or a package), is the candidate's.

For the events below the hook finds who asked: the innermost frame whose code is not the
standard library's or the import machinery's.  kbx's and installed packages' code may; any other
(the candidate's) gets ``PermissionError``:

- reaching kbx's state in memory: ``gc`` object walks, frames (``sys._getframe``, ``tb_frame``,
  ``gi_frame``...), ``__code__`` and function defaults, tracing, profiling and audit hooks,
  ``ctypes``, ``/proc/*/mem``;
- working outside the recorded process: ``fork``, ``exec``, ``subprocess``, ``posix_spawn``,
  ``os.system`` (a helper process's torch work would escape ``opcheck``);
- new code or function objects (``code.__new__``, ``function.__new__``).

Frames and ``gc``'s object walks reach kbx's state however deep in a library they are taken,
so for these (``REACHING``) the standard library's and installed packages' frames are
skipped alike and the nearest principal decides: candidate code is refused, kbx's own runtime
(its frozen copies, not the real modules' functions, which candidate code can call with
arguments of its own) and a package's module body running at its import may.  A package that
takes a frame or walks ``gc`` for candidate code, however many of its own functions lie
between (pydantic's ``parent_frame_namespace``, torch's pytree calling ``sys._getframe`` or
``gc.get_objects`` handed to it as a callback: ``tests/exploits/{package_frame_locals,
package_callback_gc,package_chain_frames}``), is refused, unless it is one of the functions
that read only names or text from the frame (``name_readers``).

What it does not see (patching module and class attributes is not audited by Python) is covered
by ``pristine`` and ``bound``; docs/design/trust-model.md gives the limits.
"""

from __future__ import annotations

import _thread
import os
import sys
import sysconfig
import types
from types import SimpleNamespace
from typing import Any

DENIED = frozenset(
    """
    gc.get_objects gc.get_referrers gc.get_referents sys._getframe sys._current_frames
    sys._current_exceptions sys._getframemodulename sys.settrace sys.setprofile
    sys.monitoring.register_callback code.__new__ os.fork os.forkpty os.posix_spawn os.exec
    os.spawn os.system subprocess.Popen pty.spawn function.__new__ object.__getattr__
    object.__setattr__ object.__delattr__ cpython.PyInterpreterState_Clear sys.addaudithook
    """.split()
)
DENIED_PREFIXES = ("ctypes.", "_ctypes.")
# events that hand a frame (and with it every caller's locals) to whoever asked
FRAME_EVENTS = frozenset({"sys._getframe", "sys._current_frames", "sys._current_exceptions"})
FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
# events that hand over objects kbx holds, however deep in a library they are raised: the
# nearest of kbx and the candidate decides (``asker``)
GC_WALKS = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents"})
STDLIB = (os.path.dirname(os.path.realpath(os.__file__)) + os.sep,)  # the base interpreter's
_Code, _Function, _type, _id = types.CodeType, types.FunctionType, type, id
_getframe, _ident, _vars = sys._getframe, _thread.get_ident, vars
_open, _readlink, _close, _O_PATH = os.open, os.readlink, os.close, os.O_PATH
_basename = os.path.basename


def name_readers() -> dict[int, int | None]:
    """The standard library's functions that take a frame only to read names or text from it
    (their caller's module name, a stack's file names and lines) and hand no frame back: their
    code's id, and the id of the only code they may be called from (None: any)."""
    import collections
    import enum
    import logging
    import traceback
    import typing
    import warnings

    found: dict[int, int | None] = {
        _id(collections.namedtuple.__code__): None,
        _id(typing._caller.__code__): None,  # type: ignore[attr-defined]
        _id(logging.currentframe.__code__): _id(logging.Logger.findCaller.__code__),
        _id(traceback.extract_stack.__code__): None,
        _id(traceback.format_stack.__code__): None,
        _id(traceback.print_stack.__code__): None,
        _id(warnings.warn.__code__) if hasattr(warnings.warn, "__code__") else 0: None,
    }
    create = vars(enum.EnumType).get("_create_")
    if create is not None:
        found[_id(getattr(create, "__func__", create).__code__)] = None
    return found


# Installed packages' functions that take a frame only to read names from it, by file (the end
# of its real path) and qualified name, matched on trusted code only (loaded from that file):
# torch's library registration notes its caller's file and line; typing_extensions reads a name
# of typing's frame (every generic's subscription).
PACKAGE_READERS = frozenset(
    {
        ("/torch/_library/utils.py", "get_source"),
        ("/torch/library.py", "Library.__init__"),
        ("/typing_extensions.py", "_has_generic_or_protocol_as_origin"),
    }
)


def package_reader(state: dict[str, Any], code: Any) -> bool:
    """Whether trusted ``code`` is one of ``PACKAGE_READERS``."""
    real = state["reals"].get(code.co_filename, "")
    name = getattr(code, "co_qualname", code.co_name)
    return any(real.endswith(f) and name == q for f, q in PACKAGE_READERS)


def code_tree(code: Any) -> list[Any]:
    """``code`` and every code object nested in it."""
    found, todo = [], [code]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(c for c in current.co_consts if _type(c) is _Code)
    return found


def machinery() -> dict[str, Any]:
    """The import machinery as it is at ``install``: a code object it runs later is genuine only
    if the frames that run it are these, the loader is of one of these exact types with no
    attribute of its own but its name and path, and the machinery's classes and helpers are
    unchanged (``loaded_from``)."""
    bootstrap = sys.modules["_frozen_importlib"]
    external = sys.modules["_frozen_importlib_external"]
    loaders = (external.SourceFileLoader, external.SourcelessFileLoader)
    classes = (*loaders, external.FileLoader, external.SourceLoader, external._LoaderBasics)
    spaces = [own(c) for c in classes] + [vars(external), vars(bootstrap)]
    spaces += [vars(sys.modules[n]) for n in ("marshal", "_io", "_imp", "sys") if n in sys.modules]
    return {
        "call": bootstrap._call_with_frames_removed.__code__,
        "exec_module": external._LoaderBasics.exec_module.__code__,
        "loaders": loaders,
        "spaces": [(space, dict(space)) for space in spaces],
        "prefix": sys.pycache_prefix,
    }


def own(cls: type) -> dict[str, Any]:
    """A class's own dict behind its read-only view (compared, never written)."""
    import gc

    return gc.get_referents(vars(cls))[0]  # type: ignore[no-any-return]


def loaded_from(state: dict[str, Any], frame: Any, code: Any) -> str | None:
    """The file the import machinery bound at install runs ``code`` from (``frame``: the frame
    that called ``exec``), or None if this is not that machinery."""
    m = state["machinery"]
    if frame is None or frame.f_code is not m["call"]:
        return None
    caller = frame.f_back
    if caller is None or caller.f_code is not m["exec_module"]:
        return None
    loader = caller.f_locals.get("self")
    if _type(loader) not in m["loaders"] or set(_vars(loader)) - {"name", "path"}:
        return None
    if sys.pycache_prefix != m["prefix"] or any(changed(s, was) for s, was in m["spaces"]):
        return None
    path = _vars(loader).get("path")
    return path if _type(path) is str and code.co_filename == path else None


def changed(space: dict[str, Any], was: dict[str, Any]) -> bool:
    """Whether a function or class of ``was`` is no longer in ``space``."""
    return any(space.get(k, was) is not v for k, v in was.items() if callable(v))


def real_path(name: str) -> str:
    """The kernel's own resolution of an existing absolute path (``""`` for anything else): no
    Python code of the standard library, which the candidate could replace, takes part."""
    if not name.startswith("/"):
        return ""
    try:
        fd = _open(name, _O_PATH)
    except OSError:
        return ""
    try:
        return _readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""
    finally:
        _close(fd)


def file_kind(state: dict[str, Any], name: str) -> str | None:
    """``trusted`` (kbx, an installed package), ``system`` (the standard library, the import
    machinery) or None, resolved once per name (``state["reals"]`` keeps the real path)."""
    files = state["files"]
    if name not in files:
        real = state["reals"][name] = real_path(name)
        if real and real.startswith(state["trusted"]):
            files[name] = "trusted"
        elif (real and real.startswith(STDLIB)) or name.startswith("<frozen "):
            files[name] = "system"
        else:
            files[name] = None
    return files[name]  # type: ignore[no-any-return]


def add(state: dict[str, Any], code: Any) -> None:
    """``code`` and the code nested in it, if its file is trusted or the standard library's
    (each also noted in ``state["added"]``)."""
    codes = state["codes"]
    if _id(code) in codes:
        return
    kind = file_kind(state, code.co_filename)
    if kind is None:
        return
    todo = [code]
    while todo:
        current = todo.pop()
        if codes.setdefault(_id(current), (current, kind))[0] is current:
            state["added"].append(current)
            todo.extend(c for c in current.co_consts if _type(c) is _Code and _id(c) not in codes)


def gather(state: dict[str, Any]) -> None:
    """Add the code of every function alive now and of every frame running."""
    import gc

    frame: Any

    codes = state["codes"]
    for obj in gc.get_objects():
        if _type(obj) is _Function and _id(obj.__code__) not in codes:
            add(state, obj.__code__)
    for frame in sys._current_frames().values():  # what runs now, module code included
        while frame is not None:
            add(state, frame.f_code)
            frame = frame.f_back


def codes_under(state: dict[str, Any], root: str) -> list[Any]:
    """The trusted code objects whose file lies under ``root`` (a package's folder), kept up
    to date as code is added (a fork server's children start from its list)."""
    found, seen = state["under"].get(root, ([], 0))
    reals, added = state["reals"], state["added"]
    found = found + [c for c in added[seen:] if reals.get(c.co_filename, "").startswith(root)]
    state["under"][root] = (found, len(added))
    return found


def kind_of(state: dict[str, Any], code: Any) -> str:
    entry = state["codes"].get(_id(code))
    return entry[1] if entry is not None and entry[0] is code else "other"


def relevant(event: str, args: tuple[Any, ...]) -> bool:
    if event == "open":
        path = str(args[0]) if args else ""
        return path.startswith("/proc/") and path.endswith(("/mem", "/pagemap"))
    if event in ("object.__setattr__", "object.__delattr__"):
        owner = getattr(args[0], "__module__", None) or _type(args[0]).__module__
        return str(owner).split(".")[0] in ("kbx", "torch", "triton", "numpy")
    return True


def asker(state: dict[str, Any], event: str, args: tuple[Any, ...], frame: Any) -> str | None:
    """``file:line`` of the code that asked (``frame``: the frame that raised the event), if it
    is not trusted; else None.  That is the innermost frame whose code is not the standard
    library's or the import machinery's; for an event that reaches kbx's state (a frame, a
    ``gc`` walk) packages' frames are skipped too, and the nearest of kbx's own runtime and the
    candidate asks (``acts_for_itself``)."""
    gives_frame = event in FRAME_EVENTS or (
        event == "object.__getattr__" and len(args) > 1 and args[1] in FRAME_ATTRIBUTES
    )
    if gives_frame and reads_name(state, frame):
        return None
    reaching = gives_frame or event in GC_WALKS
    while frame is not None:
        kind = kind_of(state, frame.f_code)
        if kind == "other":
            return where(frame)
        if kind == "trusted" and (not reaching or acts_for_itself(state, frame)):
            return None
        frame = frame.f_back
    return None


def acts_for_itself(state: dict[str, Any], frame: Any) -> bool:
    """Whether a trusted frame acts on its own behalf: kbx's code running over a frozen copy of
    its module (``bound``; the real module's functions are anyone's to call), or a module body
    running at its import."""
    code = frame.f_code
    if code.co_name == "<module>":
        return True
    if not state["reals"].get(code.co_filename, "").startswith(state["own"]):
        return False
    globals_ = frame.f_globals
    name = globals_.get("__name__")
    if _type(name) is not str or not (name == "kbx" or name.startswith("kbx.")):
        return False  # kbx's code over globals of someone else's (``eval(code, globals)``)
    module = sys.modules.get(name)
    return module is not None and _vars(module) is not globals_


def reads_name(state: dict[str, Any], frame: Any) -> bool:
    """Whether ``frame`` is a function that only reads its caller's module name, file or line,
    called from where it may be."""
    code = frame.f_code
    readers = state["readers"]
    if _id(code) not in readers:
        return kind_of(state, code) == "trusted" and package_reader(state, code)
    if kind_of(state, code) != "system":
        return False
    caller = readers[_id(code)]
    return caller is None or (frame.f_back is not None and _id(frame.f_back.f_code) == caller)


def where(frame: Any) -> str:
    return f"{_basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def hook(state: dict[str, Any]) -> Any:
    """The audit hook over ``state`` (a closure: no class the candidate could change is looked
    up when it runs)."""
    inside: dict[int, bool] = {}

    def audit(event: str, args: tuple[Any, ...]) -> None:
        if event == "exec":
            code = args[0] if args else None
            if _type(code) is _Code and not inside.get(_ident()):
                inside[_ident()] = True
                try:
                    path = loaded_from(state, _getframe(1), code)
                    if path is not None and file_kind(state, path) is not None:
                        add(state, code)
                finally:
                    inside[_ident()] = False
            return
        if not (event in DENIED or event.startswith(DENIED_PREFIXES) or event == "open"):
            return
        if inside.get(_ident()):
            return
        inside[_ident()] = True
        try:
            who = asker(state, event, args, _getframe(1)) if relevant(event, args) else None
        finally:
            inside[_ident()] = False
        if who is not None:
            state["denied"].append(event)
            raise PermissionError(
                f"kbx: a candidate may not use {event} ({who}; see kbx's trust model)"
            )

    return audit


def own_folder() -> str:
    """kbx's source folder."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))) + os.sep


def trusted_folders() -> tuple[str, ...]:
    """kbx's source and every installed package's folder."""
    kbx_dir = own_folder().rstrip(os.sep)
    packages = [sysconfig.get_paths()[k] for k in ("purelib", "platlib")] + list(sys.path)
    folders = {
        os.path.realpath(p) for p in packages if "site-packages" in p or "dist-packages" in p
    }
    return tuple(sorted({*(f + os.sep for f in folders), kbx_dir + os.sep}))


def new_state() -> dict[str, Any]:
    """The trusted code objects of every function alive now (by id, kept alive), the import
    machinery that may add more, and what the hook refused."""

    state: dict[str, Any] = {
        "trusted": trusted_folders(), "own": own_folder(), "codes": {}, "files": {},
        "reals": {}, "added": [],
        "under": {},
        "denied": [], "readers": name_readers(), "machinery": machinery(),
    }  # fmt: skip
    gather(state)
    return state


# the hook's state once installed in this process (an object ``bound`` does not copy: the
# module and its frozen copies share it; a fork server's children inherit hook and state)
INSTALLED = SimpleNamespace(state=None)


def install() -> dict[str, Any]:
    """Add the hook (for the life of the process) over a ``new_state``, unless this process has
    it (inherited from the fork server, where it costs no child a census of its code); returns
    the state.  Called from frozen code (``bound``), the hook runs frozen code."""
    if INSTALLED.state is not None:
        return INSTALLED.state  # type: ignore[no-any-return]
    state = new_state()
    sys.addaudithook(hook(state))
    INSTALLED.state = state
    return state
