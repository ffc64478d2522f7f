"""kbx's own code in the candidate's child, bound before the candidate is imported.

Python looks a function's globals and builtins up when it runs, and a candidate can rebind any
module attribute (``runner.call_case = ...``, ``builtins.isinstance = ...``): nothing audits it.
``freeze`` therefore re-makes the functions of kbx's child-side modules over private copies of
their namespaces, of the kbx modules they name, and of ``builtins``, each closure cell a new one:
what runs after the import finds the objects that were there before it, whatever the candidate
rebinds.  Classes stay shared (their methods are looked up on the class): code that runs after
the import calls methods bound here (``method``), never through an instance.

``sealed`` makes the small functions kbx installs where the candidate can reach them (Triton's
launch method, the interpreter's libdevice hook): their globals are empty and their closure holds
only a generator, whose frame (and what it keeps: counters, range names) the guard keeps from
candidate code.
"""

from __future__ import annotations

import builtins
import contextlib
import sys
import types
from collections.abc import Callable, Iterable
from typing import Any

_Function, _Cell, _Module = types.FunctionType, types.CellType, types.ModuleType


class Frozen:
    """Private copies of modules: ``modules[name]`` is a module object outside ``sys.modules``
    whose functions run over its own namespace."""

    def __init__(self, names: Iterable[str]) -> None:
        originals = {n: sys.modules[n] for n in names}
        self.modules = {n: _Module(n, getattr(m, "__doc__", None)) for n, m in originals.items()}
        self.by_globals = {id(vars(m)): self.modules[n] for n, m in originals.items()}
        self.made: dict[int, Any] = {}
        self.private_builtins = dict(vars(builtins))
        for name, module in originals.items():
            vars(self.modules[name]).update(vars(module))
        for name in originals:
            space = vars(self.modules[name])
            space["__builtins__"] = self.private_builtins
            for key, value in list(space.items()):
                space[key] = self.remap(value)

    def remap(self, value: Any) -> Any:
        """``value`` as frozen code should see it: a kbx function or module of the set by its
        copy; a dict, list or set of the module's by a copy of its own (tables stay as they
        were); anything else as it is."""
        if type(value) is _Function:
            return self.function(value)
        if type(value) is _Module and id(vars(value)) in self.by_globals:
            return self.by_globals[id(vars(value))]
        if type(value) is tuple:
            return tuple(self.remap(v) for v in value)
        if type(value) in (dict, list, set):
            if id(value) not in self.made:
                kind = type(value)
                self.made[id(value)] = kind()  # cycles end here
                copy = self.made[id(value)]
                if kind is dict:
                    copy.update({k: self.remap(v) for k, v in value.items()})
                elif kind is list:
                    copy.extend(self.remap(v) for v in value)
                else:
                    copy.update(value)
            return self.made[id(value)]
        return value

    def function(self, fn: Any) -> Any:
        """The copy of ``fn`` over its module's copy (``fn`` itself if its module is not in the
        set), with new closure cells and its defaults remapped."""
        target = self.by_globals.get(id(fn.__globals__))
        if target is None:
            return fn
        if id(fn) in self.made:
            return self.made[id(fn)]
        cells = tuple(_Cell() for _ in fn.__closure__ or ())
        copy = _Function(fn.__code__, vars(target), fn.__name__, None, cells or None)
        self.made[id(fn)] = copy
        for cell, old in zip(cells, fn.__closure__ or (), strict=True):
            with contextlib.suppress(ValueError):  # an empty cell stays empty
                cell.cell_contents = self.remap(old.cell_contents)
        copy.__defaults__ = tuple(self.remap(v) for v in fn.__defaults__ or ()) or None
        kw = fn.__kwdefaults__
        copy.__kwdefaults__ = {k: self.remap(v) for k, v in kw.items()} if kw else None
        copy.__qualname__, copy.__doc__ = fn.__qualname__, fn.__doc__
        return copy

    def get(self, module: str, name: str) -> Any:
        return getattr(self.modules[module], name)

    def method(self, obj: Any, name: str) -> Callable[..., Any]:
        """``obj.name`` bound now: its class's function, frozen, bound to ``obj``."""
        for cls in type(obj).__mro__:
            if name in vars(cls):
                return types.MethodType(self.function(vars(cls)[name]), obj)
        raise AttributeError(name)


def freeze(prefix: str = "kbx") -> Frozen:
    """Every loaded module named ``prefix`` or below it, frozen together."""
    names = [n for n, m in sys.modules.items() if (n == prefix or n.startswith(prefix + "."))]
    return Frozen(n for n in names if isinstance(sys.modules[n], _Module))


def sealed(gate: Any, code: types.CodeType, name: str) -> Callable[..., Any]:
    """A function of ``code`` (one free variable: ``gate``) whose globals are empty: reaching it
    (a class attribute of Triton's) leads nowhere but to ``gate``."""
    return _Function(code, {"__builtins__": {}}, name, None, (_Cell(gate),))
