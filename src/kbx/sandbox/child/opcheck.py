"""Runtime evidence of what a candidate computes with torch instead of Triton.

``OpRecorder`` keeps torch's profiler on from the candidate's import to its last correctness
call.  The profiler records every aten operation at the dispatcher, in C++, so patching a Python
function (``torch.nn.functional.gelu = ...``), a ``TorchFunctionMode`` or kbx's launch counter
hides nothing.  kbx's own torch work in the child (copies of inputs and outputs) runs inside a
harness range and, in the CPU interpreter, Triton's launch machinery inside a launch range (kbx's
libdevice stand-ins compute with torch there); both are left out, as are operations nested
inside another recorded operation.  Candidate code that runs inside a launch (its grid function)
runs in a candidate range within it, and counts.  On the GPU there is no launch range: kbx runs
no torch work inside a launch there, and candidate code Triton calls inside one (a grid function,
a hook, an argument's methods) counts.  What remains is the candidate's own
torch work, and every operation beyond the documented glue (allocation, views, reshapes,
copies, metadata; ``GLUE``) makes the verdict ``no_triton``, naming the operations.

A candidate that stops the profiler is caught: the session's opening sentinel is then missing
(``Tampered``).  The evidence is gathered in the candidate's own process; the parent classifies
it (``compute_ops``) and requires it.  docs/design/trust-model.md gives the limits.
"""

from __future__ import annotations

import contextlib
import functools
import secrets
from collections import Counter
from collections.abc import Iterator
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from kbx.sandbox.wire.channel import OTHER_US, TRITON_US


class Tampered(Exception):
    """The profiler session was stopped or replaced by the candidate."""


def all_threads() -> Any:
    """The profiler's setting that records every thread's operations (a candidate's own
    threads included), where this torch has it."""
    try:
        return torch._C._profiler._ExperimentalConfig(profile_all_threads=True)
    except (AttributeError, TypeError):
        return None


class OpRecorder:
    """CPU profiler sessions, one per case (``start``, ``stop``).  Its range names carry a
    token drawn when it is made, before the candidate is imported, and kept in this object,
    which the child hands down its call stack only: candidate code cannot name kbx's ranges
    (``guard`` keeps it from frames and the garbage collector).  ``python_reads`` counts the
    candidate's copies of tensors into Python and numpy (``Tensor.numpy``, ``tolist``...), which
    the profiler does not see."""

    def __init__(self, gpu: bool = False) -> None:
        token = secrets.token_hex(8)
        self.gpu = gpu  # also record GPU kernels: the share of GPU time in Triton's (``share``)
        self.kernels: set[str] = set()  # names of the Triton kernels launched (``launches``)
        self.sentinel, self.harness_name = f"kbx::session:{token}", f"kbx::harness:{token}"
        self.launch_name, self.candidate_name = f"kbx::launch:{token}", f"kbx::candidate:{token}"
        self.skip, self.reopen = (self.harness_name, self.launch_name), (self.candidate_name,)
        self.session: profile | None = None
        self.python_reads = 0
        # bound now, before the candidate is imported: patching the module's names later
        # changes nothing here
        self.profile, self.record, self.threads = profile, record_function, all_threads()
        self.own = functools.partial(
            own_op, skip=self.skip, _ancestors=ancestors, reopen=self.reopen
        )

    def start(self) -> None:
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.gpu else [])
        self.session = self.profile(activities=activities, experimental_config=self.threads)
        self.session.__enter__()
        with self.record(self.sentinel):
            pass

    def stop(self, _count: Any = Counter) -> dict[str, int]:
        """End the session: the top-level aten operations outside kbx's ranges, by name."""
        session, self.session = self.session, None
        assert session is not None
        try:
            session.__exit__(None, None, None)
            events = list(session.events() or [])
        except Exception as error:  # noqa: BLE001 - a session the candidate ended
            raise Tampered(f"kbx's profiler session was stopped ({type(error).__name__})") from None
        if sum(1 for e in events if e.name == self.sentinel) != 1:
            raise Tampered("kbx's profiler session was restarted during the candidate's run")
        calls = dict(_count(e.name for e in events if self.own(e)))
        if self.gpu:
            calls.update(gpu_times(events, self.skip, self.kernels, self.reopen))
        if self.python_reads:
            calls["kbx::python_read"], self.python_reads = self.python_reads, 0
        return calls

    def harness(self) -> contextlib.AbstractContextManager[Any]:
        """Around kbx's own torch work in the child: left out of the evidence."""
        return self.record(self.harness_name)

    def launch(self) -> contextlib.AbstractContextManager[Any]:
        """Around one Triton launch (``launches``) in the CPU interpreter, where kbx's libdevice
        stand-ins make torch operations of their own; nothing on the GPU."""
        return contextlib.nullcontext() if self.gpu else self.record(self.launch_name)

    def candidate(self) -> contextlib.AbstractContextManager[Any]:
        """Around candidate code kbx calls inside a launch range (a grid function): its
        operations count as the candidate's."""
        return self.record(self.candidate_name)

    def watch_python_reads(self, outside_launch: Any) -> Any:
        """Count copies of tensors into Python and numpy made outside a Triton launch
        (``outside_launch()``); returns a check that the hooks are still in place."""
        hooked = {}
        for name in ("numpy", "__array__", "tolist", "__dlpack__"):
            original = getattr(torch.Tensor, name)

            def counted(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
                if outside_launch():
                    self.python_reads += 1
                return _original(*args, **kwargs)

            setattr(torch.Tensor, name, counted)
            hooked[name] = counted

        def intact() -> bool:
            return all(getattr(torch.Tensor, n) is f for n, f in hooked.items())

        return intact


def own_op(
    event: Any, skip: tuple[str, ...], _ancestors: Any = None, reopen: tuple[str, ...] = ()
) -> bool:
    """An aten operation the candidate called itself: not nested in another operation or in one
    of kbx's ranges (``skip``), unless a candidate range (``reopen``) lies in between."""
    if not event.name.startswith("aten::"):
        return False
    for parent in (_ancestors or ancestors)(event):
        if parent.name in reopen:
            return True
        if parent.name in skip or parent.name.startswith("aten::"):
            return False
    return True


def ancestors(event: Any) -> Iterator[Any]:
    parent = event.cpu_parent
    while parent is not None:
        yield parent
        parent = parent.cpu_parent


def gpu_times(
    events: list[Any], skip: tuple[str, ...], kernels: set[str], reopen: tuple[str, ...] = ()
) -> dict[str, int]:
    """Microseconds of GPU time in the candidate's Triton kernels (by name) and in all the
    other work the GPU ran in the session, less what was launched inside kbx's ranges
    (``skip``).  Work launched outside any torch operation counts as the candidate's too: a
    CUDA kernel of an extension it built is no operation's."""
    work = [e for e in events if device_work(e)]
    triton_us = sum(e.time_range.elapsed_us() for e in work if e.name in kernels)
    rest_us = sum(e.time_range.elapsed_us() for e in work if e.name not in kernels)
    kbx_us = sum(
        k.duration
        for e in events
        if getattr(e, "kernels", None) and in_range(e, skip, reopen)
        for k in e.kernels
        if k.name not in kernels
    )
    return {TRITON_US: int(triton_us), OTHER_US: int(max(0, rest_us - kbx_us))}


def device_work(event: Any) -> bool:
    """A kernel, copy or fill the GPU ran; not a range's span on the GPU's timeline."""
    if not str(getattr(event, "device_type", "")).endswith("CUDA"):
        return False
    return not (
        getattr(event, "activity_type", None) == "gpu_user_annotation"
        or getattr(event, "is_user_annotation", False)
    )


def in_range(event: Any, skip: tuple[str, ...], reopen: tuple[str, ...] = ()) -> bool:
    """Whether a CPU event is one of the ranges ``skip`` names or lies inside one, with no
    ``reopen`` range in between."""
    for e in (event, *ancestors(event)):
        if e.name in reopen:
            return False
        if e.name in skip:
            return True
    return False
