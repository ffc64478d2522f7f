"""An audit hook in the candidate's child: what candidate code may not do inside the process.

The sandbox (``confine``) keeps the child from the host; this keeps candidate code from kbx's
own code and evidence in the same process.  ``install`` adds a ``sys.addaudithook`` hook before
the candidate is imported; Python offers no way to remove one.  For the events below it finds
who asked: the innermost frame outside the standard library and the import machinery.  A frame
of kbx, torch, triton or another installed package may; the candidate's file (or code it made)
may not, and gets ``PermissionError``:

- reaching kbx's state in memory: ``gc`` object walks, frames (``sys._getframe``, ``tb_frame``,
  ``gi_frame``...), ``__code__`` and function defaults, tracing and profiling hooks, ``ctypes``,
  ``/proc/*/mem``;
- working outside the recorded process: ``fork``, ``exec``, ``subprocess``, ``posix_spawn``,
  ``os.system`` (a helper process's torch work would escape ``opcheck``);
- forging where code comes from: ``compile`` with a file name under a trusted folder, new code
  objects.

What it does not see (patching module attributes and class attributes is not audited by
Python) is covered by ``opcheck``'s integrity check; docs/design/trust-model.md gives the
limits.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
from typing import Any

DENIED = frozenset(
    """
    gc.get_objects gc.get_referrers gc.get_referents sys._getframe sys._current_frames
    sys._current_exceptions sys._getframemodulename sys.settrace sys.setprofile
    sys.monitoring.register_callback code.__new__ os.fork os.forkpty os.posix_spawn os.exec
    os.spawn os.system subprocess.Popen pty.spawn function.__new__ object.__getattr__
    object.__setattr__ object.__delattr__ cpython.PyInterpreterState_Clear
    """.split()
)
DENIED_PREFIXES = ("ctypes.", "_ctypes.")
STDLIB = (os.path.dirname(os.path.realpath(os.__file__)) + os.sep,)  # the base interpreter's
TRANSPARENT = ("<frozen ",)  # the import machinery
FRAME_GIVERS = ("/inspect.py", "/traceback.py")  # stdlib modules that hand frames back


class Guard:
    """The hook's state: which files are trusted, and a per-thread re-entry flag."""

    def __init__(self, trusted: tuple[str, ...]) -> None:
        self.trusted = trusted
        self.inside = threading.local()
        self.denied: list[str] = []
        self.kinds: dict[str, str] = {}  # a code file name -> where it lies (``kind``)

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if not (
            event in DENIED or event.startswith(DENIED_PREFIXES) or event in ("open", "compile")
        ):
            return
        if getattr(self.inside, "on", False):
            return
        self.inside.on = True
        try:
            asker = self.asker(event) if self.relevant(event, args) else None
        finally:
            self.inside.on = False
        if asker is None:
            return
        self.denied.append(event)
        raise PermissionError(
            f"kbx: a candidate may not use {event} ({asker}; see kbx's trust model)"
        )

    def relevant(self, event: str, args: tuple[Any, ...]) -> bool:
        if event == "open":
            path = str(args[0]) if args else ""
            return path.startswith("/proc/") and path.endswith(("/mem", "/pagemap"))
        if event == "compile":  # new code may not claim a trusted file
            name = str(args[1]) if len(args) > 1 else ""
            return self.is_trusted(os.path.realpath(name)) if name.startswith("/") else False
        if event in ("object.__setattr__", "object.__delattr__"):
            owner = getattr(args[0], "__module__", None) or type(args[0]).__module__
            return str(owner).split(".")[0] in ("kbx", "torch", "triton", "numpy")
        return True

    def is_trusted(self, path: str) -> bool:
        return path.startswith(self.trusted)

    def asker(self, event: str) -> str | None:
        """``file:line`` of the code that asked, if it is not trusted; else None.  That is the
        innermost frame outside the standard library and the import machinery, with two
        exceptions: code the import machinery compiles is trusted (an import is not a forged
        file), and a frame lookup made by the standard library itself (``namedtuple``, ``enum``
        and ``typing`` name their caller's module) is, unless through ``inspect`` or
        ``traceback``, which hand frames back."""
        frame = sys._getframe(2)
        first = True
        while frame is not None:
            name = frame.f_code.co_filename
            kind = self.kinds.get(name) or self.kind(name)
            if kind == "trusted":  # installed packages sit below the stdlib in a venv
                return None
            if kind == "transparent":
                if event == "compile" and "importlib" in name:
                    return None
            elif kind in ("stdlib", "giver"):
                if first and event == "sys._getframe" and kind != "giver":
                    return None
            else:
                return f"{os.path.basename(name)}:{frame.f_lineno}"
            first = False
            frame = frame.f_back  # type: ignore[assignment]
        return None

    def kind(self, name: str) -> str:
        """Where code of this file name lies: trusted, transparent (the import machinery),
        stdlib, giver (a stdlib module that hands frames back) or other; resolved once per
        name, since a path's ``realpath`` costs system calls and events come by the thousand."""
        real = os.path.realpath(name)
        if self.is_trusted(real):
            kind = "trusted"
        elif name.startswith(TRANSPARENT):
            kind = "transparent"
        elif real.startswith(STDLIB):
            kind = "giver" if real.endswith(FRAME_GIVERS) else "stdlib"
        else:
            kind = "other"
        self.kinds[name] = kind
        return kind


def trusted_folders() -> tuple[str, ...]:
    """kbx's source and every installed package's folder."""
    kbx_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    packages = [sysconfig.get_paths()[k] for k in ("purelib", "platlib")] + list(sys.path)
    folders = {
        os.path.realpath(p) for p in packages if "site-packages" in p or "dist-packages" in p
    }
    return tuple(sorted({*(f + os.sep for f in folders), kbx_dir + os.sep}))


def install() -> Guard:
    """Add the hook (for the life of the process)."""
    guard = Guard(trusted_folders())
    sys.addaudithook(guard)
    return guard
