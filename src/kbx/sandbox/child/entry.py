"""A candidate's entry function, imported from its file, and a candidate's failure as a verdict
with a one-line detail that names the candidate's file and line.

The child imports its candidate here; the solution audit (``audit/solutions.py``) imports
reference solutions the same way, so this module holds nothing of the child's stages.
"""

from __future__ import annotations

import importlib.util
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kbx.suite.task import Task
from kbx.suite.verdict import Verdict

ENTRY_FALLBACK = "kernel_function"  # KernelBench-X's generic entry name
CANDIDATE_PATH = "candidate.py"  # in the child's working folder


class CandidateFailure(Exception):
    """The candidate's fault: its verdict, and a line a person (or a model) can act on."""

    def __init__(self, verdict: Verdict, detail: str) -> None:
        super().__init__(detail)
        self.verdict, self.detail = verdict, detail


def import_entry(task: Task, path: Path) -> Callable[..., Any]:
    """The task's entry function (or ``ENTRY_FALLBACK``) of the module at ``path``."""
    spec = importlib.util.spec_from_file_location("kbx_candidate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - SystemExit at import is the candidate's fault
        raise CandidateFailure(Verdict.IMPORT_FAILED, explain(exc, path)) from None
    for name in (*task.entry_names(), ENTRY_FALLBACK):
        try:  # a module's own __getattr__ is the candidate's code
            fn = getattr(module, name, None)
            found = callable(fn)
        except BaseException as exc:  # noqa: BLE001 - whatever it raises is its import's failure
            raise CandidateFailure(Verdict.IMPORT_FAILED, explain(exc, path)) from None
        if found:
            return fn  # type: ignore[no-any-return,return-value]
    names = " or ".join(repr(n) for n in (*task.entry_names(), ENTRY_FALLBACK))
    raise CandidateFailure(Verdict.NO_ENTRY, f"the code defines no function named {names}")


def failure(exc: BaseException) -> CandidateFailure:
    """What the candidate raised during a call, as its failure."""
    return CandidateFailure(classify(exc), explain(exc, Path(CANDIDATE_PATH)))


def classify(exc: BaseException) -> Verdict:
    """The verdict of what the candidate raised; one whose class or message cannot be read
    (the candidate's ``__str__`` or metaclass raises) is a ``runtime_error``."""
    try:
        return classified(exc)
    except BaseException:  # noqa: BLE001 - the candidate's exception is its own fault
        return Verdict.RUNTIME_ERROR


def classified(exc: BaseException) -> Verdict:
    cls = type(exc)  # the object's own type: ``__class__`` may be the candidate's property
    text = f"{_name(cls)}: {message(exc)}"
    if issubclass(cls, MemoryError | torch.OutOfMemoryError) or any(
        m in text for m in ("out of memory", "can't allocate memory")
    ):
        return Verdict.OUT_OF_MEMORY
    if "illegal memory access" in text or "CUDA error" in text or "device-side assert" in text:
        return Verdict.CRASHED  # the CUDA context is poisoned: nothing after this is trustworthy
    names = {_name(c) for c in _mro(cls)}
    # On the CPU an error inside an interpreted kernel body (InterpreterError) is what the GPU
    # compiler would have rejected: both are compile_failed.
    if names & {"CompilationError", "CompileTimeAssertionFailure", "InterpreterError"}:
        return Verdict.COMPILE_FAILED
    return Verdict.RUNTIME_ERROR


# type's own descriptors: a metaclass of the candidate's may define ``__name__`` or ``__mro__``
_name, _mro = type.__dict__["__name__"].__get__, type.__dict__["__mro__"].__get__


def message(exc: BaseException) -> str:
    """``str(exc)`` on one line, at most 400 characters, as a plain string; the candidate's
    ``__str__`` runs here, so what it raises, or a ``str`` subclass it returns, is not kbx's
    problem."""
    try:
        return " ".join(str.split(str(exc)))[:400]
    except BaseException:  # noqa: BLE001 - its message is unreadable: said so
        return "(its message could not be read)"


def explain(exc: BaseException, path: Path) -> str:
    """``Type: message (candidate.py line N)`` with the innermost line of the candidate's file."""
    name, text = _name(type(exc)), message(exc)
    if isinstance(exc, SyntaxError):  # its message already names the file and line
        return f"{name}: {text}"
    line = None
    try:
        for frame in traceback.extract_tb(exc.__traceback__):
            if Path(frame.filename).name == path.name:
                line = frame.lineno
    except BaseException:  # noqa: BLE001 - a traceback of the candidate's making: no line
        line = None
    where = f" ({path.name} line {line})" if line else ""
    return f"{name}: {text}{where}"
