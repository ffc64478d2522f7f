"""Verdicts another candidate's fault can cause, and their second evaluation, alone.

Candidates share a GPU (and the cores): a kernel that never ends stalls every context on the device,
and one that fills its memory starves the others, so an honest candidate evaluated beside such a
fault can run out of wall-clock time or of GPU memory through no fault of its own (the measurement:
docs/design/trust-model.md, GPU faults); a child can even fail to start, its CUDA context or kbx's
set-up finding the GPU's memory full. Such a verdict is therefore final only once the candidate has
been evaluated again after the rest of its batch: ``Evaluator.pairs`` holds it back until then, and
evaluates each one by itself, which under ``kbx eval`` (one batch) is with nothing else in flight; a
service's concurrent batches may still run beside it. The candidate's own fault comes back the same;
a victim's does not.  A disk that ran full in kbx's own writes (``harness_error``, on any device) is
judged again the same way: each child's folder is a filesystem of its own where the machine allows,
so a shared disk that filled is no candidate's verdict.
"""

from __future__ import annotations

from kbx.core.result import Result
from kbx.sandbox.stderrs import lacked_space
from kbx.suite.verdict import SHARED_DISK_FULL, START_FAILED, Verdict

WALL_CLOCK = "(wall clock)"  # the follower's timeout that other processes' load can cause


def suspect(result: Result) -> bool:
    """Whether ``result``'s verdict may be another candidate's doing: a wall-clock timeout on
    any device; on a GPU, which the run's candidates share, out of memory, or a child that
    failed to start (before any candidate code: it stays ``harness_error`` if kbx's own)."""
    if result.verdict is Verdict.TIMEOUT and WALL_CLOCK in result.detail:
        return True
    if result.verdict is Verdict.HARNESS_ERROR and lacked_space(result.detail):
        return True  # a full disk in kbx's own writes: no candidate's fault
    if result.verdict is Verdict.CRASHED and result.detail.startswith(SHARED_DISK_FULL):
        return True  # its writes failed on a disk it shares with other children
    if result.device != "cuda":
        return False
    if result.verdict is Verdict.HARNESS_ERROR:
        return result.detail.startswith(START_FAILED)
    return result.verdict is Verdict.OUT_OF_MEMORY


def mark(second: Result, first: Result) -> Result:
    """The second evaluation, recording the first one's verdict and reason (``meta.rerun``)."""
    second.meta["rerun"] = {"verdict": str(first.verdict), "detail": first.detail}
    return second
