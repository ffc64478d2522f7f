"""Gaps of Triton's CPU interpreter that kbx closes in the candidate's child process.

Only applied when the child runs with ``TRITON_INTERPRET=1``:
- multi-config autotuning needs a GPU to benchmark configurations; on the CPU every configuration
  computes the same result, so the first one is kept;
- libdevice functions (``extern_elementwise``) are computed by ``kbx.sandbox.child.libdevice``;
- a kernel that reads a non-constexpr global fails as it would when compiled for the GPU;
- Python float arguments are float32 scalars, as on the GPU (the interpreter keeps doubles);
- ``tl.maximum`` / ``tl.minimum`` of floats return the non-NaN operand, as compiled code does
  (the interpreter propagates NaN, so a clamp that turns NaN into a number would pass on the CPU
  and fail on the GPU: docs/design/throughput.md, Correctness findings).
"""

from __future__ import annotations

import importlib
from typing import Any

from triton.language.core import is_builtin

EXTRA = "triton.language.extra"


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


def nan_ignoring_min_max(builder: Any) -> None:
    """``tl.maximum(x, y)`` (propagate_nan=NONE, the default) lowers to LLVM's maxnum, which
    returns the other operand when one is NaN (PTX ``max.f32``): numpy's fmax, not maximum."""
    import numpy as np

    builder.create_maxnumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.fmax)
    builder.create_minnumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.fmin)


def apply() -> None:
    from triton.runtime import autotuner, interpreter

    from kbx.sandbox.child.libdevice import extern_elementwise

    interpreter.InterpreterBuilder.create_extern_elementwise = (  # type: ignore[method-assign]
        lambda self, *args: extern_elementwise(*args)
    )
    original_patch_lang = interpreter._patch_lang

    def patch_lang(fn: Any) -> Any:
        """Also route libdevice calls to the interpreter: the CUDA module's builtins, and the
        backend-neutral stubs of ``triton.language.extra.libdevice`` (which the GPU compiler
        resolves to the CUDA ones), whether used as modules or imported by name."""
        reject_plain_globals(fn)
        scope = original_patch_lang(fn)
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

    original_init = autotuner.Autotuner.__init__

    def init_first_config(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self.configs = self.configs[:1]

    autotuner.Autotuner.__init__ = init_first_config  # type: ignore[method-assign]
