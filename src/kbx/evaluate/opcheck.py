"""Runtime evidence of what a candidate computes with torch instead of Triton.

``OpRecorder`` keeps torch's profiler on from the candidate's import to its last correctness
call.  The profiler records every aten operation at the dispatcher, in C++, so patching a Python
function (``torch.nn.functional.gelu = ...``), a ``TorchFunctionMode`` or kbx's launch counter
hides nothing.  kbx's own torch work in the child (copies of inputs and outputs) runs inside a
``HARNESS`` range and Triton's launch machinery inside a ``LAUNCH`` range; both are left out, as
are operations nested inside another recorded operation.  What remains is the candidate's own
torch work, and every operation beyond the documented glue (allocation, views, reshapes,
copies, metadata; ``GLUE``) makes the verdict ``no_triton``, naming the operations.

A candidate that stops the profiler is caught: the session's opening sentinel is then missing
(``Tampered``).  The evidence is gathered in the candidate's own process; the parent classifies
it (``compute_ops``) and requires it.  docs/design/trust-model.md gives the limits.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, record_function

HARNESS = "kbx::harness"
LAUNCH = "kbx::launch"
SENTINEL = "kbx::session"

# The glue a solution may do with torch around its kernels (``scripts/op_census.py`` over the
# reference solutions): allocation and filling, views and layout, dtype and device copies,
# metadata and scalar reads, and randint/random_ (random tasks draw their kernel's seed from
# torch's generator).
GLUE = frozenset(
    """
    empty empty_like empty_strided zeros zeros_like ones ones_like full full_like new_empty
    new_zeros new_ones new_full new_empty_strided scalar_tensor lift_fresh lift_fresh_copy lift
    view view_as reshape _reshape_alias _unsafe_view permute transpose t numpy_T contiguous
    expand expand_as unsqueeze squeeze flatten unflatten movedim as_strided narrow select slice
    unbind split split_with_sizes chunk view_as_real view_as_complex alias detach to _to_copy
    copy_ clone fill_ zero_ item _local_scalar_dense resize_ resize_as_ randint random_
    broadcast_to swapaxes moveaxis result_type set_ is_nonzero _has_compatible_shallow_copy_type
    real imag conj resolve_conj resolve_neg _conj _neg_view mT mH adjoint matrix_H
    """.split()
)


class Tampered(Exception):
    """The profiler session was stopped or replaced by the candidate."""


def compute_ops(calls: dict[str, int]) -> dict[str, int]:
    """The operations of ``calls`` (aten names with counts) that are not glue."""
    return {k: v for k, v in calls.items() if k.removeprefix("aten::") not in GLUE}


class OpRecorder:
    """CPU profiler sessions, one per case (``start``, ``stop``); ``harness()`` marks kbx's own
    torch work."""

    def __init__(self) -> None:
        self.session: profile | None = None

    def __enter__(self) -> OpRecorder:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.session is not None:
            self.stop()

    def start(self) -> None:
        self.session = profile(activities=[ProfilerActivity.CPU])
        self.session.__enter__()
        with record_function(SENTINEL):
            pass

    def stop(self) -> dict[str, int]:
        """End the session: the top-level aten operations outside kbx's ranges, by name."""
        session, self.session = self.session, None
        assert session is not None
        try:
            session.__exit__(None, None, None)
            events = list(session.events() or [])
        except Exception as error:  # noqa: BLE001 - a session the candidate ended
            raise Tampered(f"kbx's profiler session was stopped ({type(error).__name__})") from None
        if sum(1 for e in events if e.name == SENTINEL) != 1:
            raise Tampered("kbx's profiler session was restarted during the candidate's run")
        return dict(Counter(e.name for e in events if own_op(e)))

    @staticmethod
    def harness() -> contextlib.AbstractContextManager[Any]:
        return record_function(HARNESS)


def own_op(event: Any) -> bool:
    """An aten operation the candidate called itself: not nested in another operation or in one
    of kbx's ranges."""
    if not event.name.startswith("aten::"):
        return False
    for parent in ancestors(event):
        if parent.name in (HARNESS, LAUNCH) or parent.name.startswith("aten::"):
            return False
    return True


def ancestors(event: Any) -> Iterator[Any]:
    parent = event.cpu_parent
    while parent is not None:
        yield parent
        parent = parent.cpu_parent


def launch_range() -> contextlib.AbstractContextManager[Any]:
    """Around one Triton launch while a recorder is on (``launches``)."""
    return record_function(LAUNCH)


def recording() -> bool:
    """Whether a profiler session is on in this process."""
    return bool(torch.autograd.profiler._is_profiler_enabled)
