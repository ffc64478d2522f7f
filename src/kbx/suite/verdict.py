"""Every way a candidate's evaluation can end, and the exception a stage raises to end it."""

from __future__ import annotations

from enum import StrEnum


class Verdict(StrEnum):
    PASSED = "passed"
    # input problems, found before anything runs
    UNREADABLE = "unreadable"  # file or JSONL line that cannot be read or decoded
    NO_CODE = "no_code"  # empty prediction
    UNKNOWN_TASK = "unknown_task"  # names a task the suite does not have
    # the candidate's own failures, found in its child process
    IMPORT_FAILED = "import_failed"  # syntax error or exception at import
    NO_ENTRY = "no_entry"  # module has no callable with the task's entry name
    COMPILE_FAILED = "compile_failed"  # Triton rejected a kernel
    RUNTIME_ERROR = "runtime_error"  # the entry raised
    TIMEOUT = "timeout"  # a stage ran past its limit
    CRASHED = "crashed"  # the process died (signal, abort, illegal memory access)
    OUT_OF_MEMORY = "out_of_memory"
    NO_TRITON = "no_triton"  # a call launched no Triton kernel
    FORBIDDEN = "forbidden"  # tampered with kbx itself (e.g. forged its progress channel)
    # found by the trusted comparison
    WRONG_SHAPE = "wrong_shape"  # also: wrong structure (tuple vs tensor, count of outputs)
    WRONG_DTYPE = "wrong_dtype"
    MISMATCH = "mismatch"  # values, a failed property check, or a non-deterministic random op
    # found by the trusted timing
    TOO_FAST = "too_fast"  # below the GPU's physical floor, or reusing results of seen inputs
    # kbx's own fault, counted apart and never blamed on the candidate
    HARNESS_ERROR = "harness_error"


START_FAILED = "child failed to start"  # a HARNESS_ERROR's reason: kbx's set-up of the child died
# a CRASHED reason where the child's writes failed on a disk other children write too (no folder
# of its own): judged again alone (``kbx.run.rerun``), where its own fault comes back the same
SHARED_DISK_FULL = "a disk shared with other children ran full"


# Verdicts the child process may report; anything else on its channel is forged by the candidate.
CHILD_VERDICTS = frozenset(
    {
        Verdict.IMPORT_FAILED,
        Verdict.NO_ENTRY,
        Verdict.COMPILE_FAILED,
        Verdict.RUNTIME_ERROR,
        Verdict.CRASHED,
        Verdict.OUT_OF_MEMORY,
        Verdict.NO_TRITON,
        Verdict.FORBIDDEN,  # kbx's profiler session stopped by the candidate (opcheck)
    }
)


class Reject(Exception):
    """Raised by a stage to end a candidate's evaluation with ``verdict`` and a one-line reason."""

    def __init__(self, verdict: Verdict, detail: str) -> None:
        super().__init__(f"{verdict}: {detail}")
        self.verdict = verdict
        self.detail = detail
