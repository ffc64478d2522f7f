"""Verdicts another candidate's fault can cause, and their second evaluation, alone.

Candidates share a GPU (and the cores): a kernel that never ends stalls every context on the device,
and one that fills its memory starves the others, so an honest candidate evaluated beside such a
fault can run out of wall-clock time or of GPU memory through no fault of its own (the measurement:
docs/design/trust-model.md, GPU faults); a child can even fail to start, its CUDA context or kbx's
set-up finding the GPU's memory full, and kbx's own work for it (the reference, the check) can
run out of memory too.  The memory budget (docs/design/memory.md) makes these rare; this is the
backstop.  Such a verdict is therefore final only once the candidate has been evaluated again after
the rest of its batch: ``Evaluator.pairs`` holds it back until then, and evaluates each one by
itself, which under ``kbx eval`` (one batch) is with nothing else in flight; a service's
concurrent batches may still run beside it.  Only the second verdict counts, and the result says
that it was judged again and why (``Result.rerun``).  The candidate's own fault comes back the
same (one that exhausts memory by itself is ``out_of_memory`` alone too); a victim's does not.
A disk that ran full in kbx's own writes (``harness_error``, on any device), or one a child shares
with others, is judged again the same way: each child's folder is a filesystem of its own where
the machine allows, so a shared disk that filled is no candidate's verdict.
"""

from __future__ import annotations

from kbx.core.result import Result
from kbx.sandbox.stderrs import lacked_memory, lacked_space
from kbx.suite.verdict import SHARED_DISK_FULL, START_FAILED, Verdict

WALL_CLOCK = "(wall clock)"  # the follower's timeout that other processes' load can cause
SET_UP = "during setting up"  # a crash's reason when kbx's set-up of the child was under way


def reason(result: Result) -> str | None:
    """Why ``result``'s verdict may be another candidate's doing, or None: a wall-clock timeout
    on any device; a child that could not start for lack of memory on any device (the host's is
    shared too); on a GPU, which the run's candidates share, any fault of kbx's own
    (``harness_error``: a child that could not start, kbx's reference or check out of memory), out
    of memory, and a crash while setting up or for lack of memory."""
    verdict, detail = result.verdict, result.detail
    if verdict is Verdict.TIMEOUT and WALL_CLOCK in detail:
        return "a wall-clock timeout, which other candidates' load can cause"
    if (
        verdict is Verdict.HARNESS_ERROR
        and detail.startswith(START_FAILED)
        and lacked_memory(detail)
    ):
        return "its child could not start for lack of memory, which other candidates can take"
    if verdict is Verdict.HARNESS_ERROR and lacked_space(detail):
        return "a full disk in kbx's own writes, which is no candidate's fault"
    if verdict is Verdict.CRASHED and detail.startswith(SHARED_DISK_FULL):
        return "its writes failed on a disk it shares with other children"
    if result.device != "cuda":
        return None
    if verdict is Verdict.HARNESS_ERROR:
        return "kbx's own fault on a GPU the run's candidates share"
    if verdict is Verdict.OUT_OF_MEMORY:
        return "out of memory on a GPU the run's candidates share"
    if verdict is Verdict.CRASHED and (SET_UP in detail or lacked_memory(detail)):
        return "a crash while setting up or for lack of memory, on a shared GPU"
    return None


def suspect(result: Result) -> bool:
    """Whether ``result`` is judged again alone before it is booked (``reason``)."""
    return reason(result) is not None


def mark(second: Result, first: Result) -> Result:
    """The second evaluation, recording the first one's verdict, its detail and why it was
    judged again (``Result.rerun``)."""
    second.rerun = {
        "verdict": str(first.verdict),
        "detail": first.detail,
        "why": reason(first) or "",
    }
    return second
