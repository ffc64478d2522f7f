"""Runtime evidence of what a candidate computes with torch instead of Triton.

``OpRecorder`` keeps torch's profiler on from the candidate's import to its last correctness
call, one session per case.  The profiler records every aten operation at the dispatcher, in C++,
on every thread, so patching a Python function, a mode or kbx's launch counter hides nothing.
The recorder drives the profiler through torch's C functions and reads the session's event tree
with the C accessors, all bound before the import; ``seal_profiler`` then takes the functions
that stop or reconfigure a session out of every module, so that only the recorder can end its
own.  A candidate that replaces torch's Python profiler code (``_filter_name``, ``EventList``)
changes nothing here.

kbx's own torch work in the child (copies of inputs and outputs, and in the CPU interpreter the
libdevice stand-ins that compute with torch) runs inside kbx's ranges, which are left out.  Each
range kbx opens gets a name drawn when it opens (``Issued``) and counts as kbx's only if exactly
one event of that name lies on kbx's thread: a candidate cannot name a range before kbx draws it,
and one that copies a name it saw (from a second profiler of its own) makes two, which is
``Tampered``, as is a session whose opening sentinel is missing or doubled.  Every other aten
operation, nested or not, is the candidate's; the parent calls anything beyond the documented
glue ``no_triton`` (``sandbox/evidence.py``).  Launches are counted the same way: each Triton
launch kbx's launch gate lets through is marked in the session (``kbx::launches``).
docs/design/trust-model.md gives the limits.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import torch
from torch.autograd import ProfilerActivity, ProfilerConfig, ProfilerState

from kbx.sandbox.child import bound
from kbx.sandbox.wire.channel import OTHER_US, TRITON_US

_prepare, _enable = torch.autograd._prepare_profiler, torch.autograd._enable_profiler
_disable = torch.autograd._disable_profiler
_Range = torch._C._profiler._RecordFunctionFast  # an immutable type: its enter and exit are C
_Event = torch._C._profiler._ProfilerEvent
_name = _Event.__dict__["name"].fget
_children = _Event.__dict__["children"].fget
_thread = _Event.__dict__["start_tid"].fget
_started = _Event.__dict__["start_time_ns"].fget
_tree = torch._C._autograd._ProfilerResult.__dict__["experimental_event_tree"]
_urandom, _hex = os.urandom, bytes.hex
LAUNCHES = "kbx::launches"  # the verified launches of a case, in its evidence
HOST_MEMORY = "kbx::host_memory"  # outputs viewing memory torch did not allocate, DLPack calls
WRITTEN = "kbx::written"  # a Python number written into a view just made
# host data in bulk (``stages.evidence``): elements read into Python one at a time (``item``),
# tensors made from Python numbers
READ, MADE = "kbx::read", "kbx::made"
# The fill_ a zero_ calls (torch's zero_ does fill_(0): always on the GPU, on the CPU for large
# or strided tensors) is the zero_'s, no tensor made from a number (``count``): Triton's benchmark
# of each autotuning config zeroes a 256 MB buffer before each of its hundreds of calls to empty
# the L2 cache, and its reset_to_zero zeroes the kernel's named arguments
VIEWS = frozenset(
    f"aten::{n}" for n in ("select", "slice", "narrow", "as_strided", "unbind", "view")
)
# tensors made from a Python number: copied into a view just made, the number is written there
# (``flat[i:i + 1].copy_(torch.full((1,), v))``) as a ``fill_`` of the view would write it
FROM_NUMBER = frozenset(
    f"aten::{n}" for n in ("full", "full_like", "new_full", "scalar_tensor", "fill_")
)


class Tampered(Exception):
    """The profiler session was stopped or replaced by the candidate, or a range forged."""


def all_threads() -> Any:
    """The profiler's setting that records every thread's operations (a candidate's own
    threads included), where this torch has it."""
    try:
        return torch._C._profiler._ExperimentalConfig(profile_all_threads=True)
    except (AttributeError, TypeError):
        return torch._C._profiler._ExperimentalConfig()


def issuer(prefix: str) -> tuple[set[str], Callable[[], Any]]:
    """The names of one kind of kbx range issued in the current session, and a function that
    draws a new one and returns the range to enter (functions, not an object: a method would
    be looked up on a class the candidate can change)."""
    names: set[str] = set()

    def draw() -> Any:
        name = prefix + _hex(_urandom(8))
        names.add(name)
        return _Range(name)

    return names, draw


# torch's C functions that silence a session without stopping it: RecordFunction turned off on
# a thread (the profiler hears of each aten operation through its callbacks), its callbacks
# removed, a session's collection paused; kbx's own work calls none of them
SILENCERS = ("_enable_record_function", "_clear_callbacks", "_toggle_collection_dynamic")


def profiler_controls(attempts: dict[str, int]) -> list[tuple[Any, Any]]:
    """The functions that start, stop, reconfigure or silence a profiler session (the recorder
    keeps its own, in its closure), each with a sealed stand-in that refuses and counts the
    attempt (``attempts["profiler"]``), for ``replace_everywhere``."""
    silencers = [getattr(torch._C._autograd, name, None) for name in SILENCERS]
    pairs = []
    for original in (_prepare, _enable, _disable, *(f for f in silencers if f is not None)):
        gate = refusing(attempts)
        next(gate)
        pairs.append((original, bound.sealed(gate, CALL_CODE, "refused")))
    return pairs


def seal(attempts: dict[str, int], counts: dict[str, int]) -> int:
    """The profiler's controls and DLPack sealed everywhere (``profiler_controls``,
    ``host_transfers``), a storage's raw transfers counted (``seal_storage``) and a redispatch
    refused (``seal_redispatch``); how many references."""
    seal_redispatch(attempts)
    seal_storage(counts)
    return replace_everywhere(profiler_controls(attempts) + host_transfers(counts))


def seal_redispatch(attempts: dict[str, int]) -> None:
    """An operator's redispatch (``OpOverload.redispatch``: its handle's ``redispatch_boxed``)
    enters a kernel below the dispatcher's RecordFunction, so the session would record nothing
    of what it computes: the handle's method is replaced by a sealed refusal, counted as a reach
    for the session (``attempts["profiler"]``).  kbx's own work and torch's outside custom
    operators call none."""
    handle = getattr(torch._C, "_DispatchOperatorHandle", None)
    if handle is not None and "redispatch_boxed" in vars(handle):
        gate = refusing(attempts)
        next(gate)
        handle.redispatch_boxed = bound.sealed(gate, CALL_CODE, "refused")


def refusing(attempts: dict[str, int]) -> Any:
    """The generator behind a sealed refusal: each call is counted and refused."""
    answer: Any = None
    while True:
        yield answer
        attempts["profiler"] = attempts.get("profiler", 0) + 1
        answer = (False, RuntimeError("kbx: the profiler is kbx's in a candidate's child"))


def replace_everywhere(replacements: list[tuple[Any, Any]]) -> int:
    """Put each ``(original, replacement)``'s replacement wherever a loaded module holds the
    original; how many references."""
    by_id = {id(original): (original, new) for original, new in replacements}
    replaced = 0
    for holder in namespaces():
        for key, value in list(holder.items()):
            found = by_id.get(id(value))
            if found is not None and found[0] is value:
                holder[key] = found[1]
                replaced += 1
    return replaced


def namespaces() -> list[dict[str, Any]]:
    """The dicts of every loaded module (where torch's Python code finds these functions)."""
    found = []
    for module in list(sys.modules.values()):
        space = getattr(module, "__dict__", None)
        if type(space) is dict:
            found.append(space)
    return found


# torch's C functions that hand a tensor's memory to another library or take another's in:
# DLPack, which no aten operation records
HOST_TRANSFERS = ("_to_dlpack", "_to_dlpack_versioned", "_from_dlpack")


def _call_code() -> Any:
    gate: Any = None

    def call(*args, **kwargs):  # type: ignore[no-untyped-def]
        ok, value = gate.send((args, kwargs))
        if ok:
            return value
        raise value

    return call.__code__


CALL_CODE = _call_code()


def counted_call(original: Any, counts: dict[str, int]) -> Any:
    """The generator behind a sealed host transfer: each ``send((args, kwargs))`` is one call of
    ``original`` (kept in this frame only), counted in ``counts["host"]``."""
    answer: Any = None
    while True:
        args, kwargs = yield answer
        counts["host"] = counts.get("host", 0) + 1
        try:
            answer = (True, original(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller to raise
            answer = (False, exc)


# A storage's methods that move its bytes to or from Python (a file object, a buffer, shared
# memory) or point it at other memory, with no aten operation; kbx's own work calls none.  Its
# weak references (``_weak_ref``, ``_new_with_weak_ptr``...), which fake tensors use, stay.
STORAGE_TRANSFERS = (
    "_write_file", "_set_from_file", "_new_with_file", "from_buffer", "from_file",
    "_swap_data_ptr_", "_resize_with_addr_", "_set_cdata", "_byteswap", "_get_shared_fd",
    "_share_fd_cpu_", "_share_filename_cpu_", "_new_shared_fd_cpu", "_new_using_fd_cpu",
    "_new_shared_filename_cpu", "_new_using_filename_cpu", "_share_cuda_", "_new_shared_cuda",
)  # fmt: skip


def seal_storage(counts: dict[str, int]) -> None:
    """Each of ``STORAGE_TRANSFERS`` replaced in ``torch._C.StorageBase`` by a sealed stand-in
    that counts its calls as host memory (``counts["host"]``), as DLPack's are.  The type is
    immutable to Python code: its dict is reached behind the read-only proxy and the type's
    attribute caches are invalidated after (``PyType_Modified``), before the candidate's import;
    the originals live on only in the stand-ins' frames."""
    base = torch._C.StorageBase
    real = gc.get_referents(base.__dict__)[0]
    for name in STORAGE_TRANSFERS:
        held = real.get(name)
        if held is None:
            continue
        static = isinstance(held, staticmethod)
        gate = counted_call(held.__func__ if static else held, counts)
        next(gate)
        stand_in = bound.sealed(gate, CALL_CODE, name)
        real[name] = staticmethod(stand_in) if static else stand_in
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(base))


def host_transfers(counts: dict[str, int]) -> list[tuple[Any, Any]]:
    """torch's DLPack functions, each with a sealed stand-in that counts its calls
    (``counts["host"]``, reported as ``HOST_MEMORY``) for ``replace_everywhere``."""
    pairs = []
    for name in HOST_TRANSFERS:
        original = getattr(torch._C, name, None)
        if original is not None:
            gate = counted_call(original, counts)
            next(gate)
            pairs.append((original, bound.sealed(gate, CALL_CODE, name)))
    return pairs


def recorder(gpu: bool = False) -> SimpleNamespace:
    """Profiler sessions, one per case (``start``, ``stop``), and kbx's ranges (``harness``,
    ``libdevice``, ``launches``: each an ``issuer``'s draw), as functions over this call's
    state; handed down the child's call stack only.  ``gpu``: also record GPU kernels, for the
    share of GPU time in the candidate's Triton kernels (``gpu_calls``, over ``kernels``)."""
    sentinel, draw_sentinel = issuer("kbx::session:")
    harness, draw_harness = issuer("kbx::harness:")
    libdevice, draw_libdevice = issuer("kbx::libdevice:")
    launches, draw_launch = issuer("kbx::launch:")
    kernels: set[str] = set()
    activities = {ProfilerActivity.CPU} | ({ProfilerActivity.CUDA} if gpu else set())
    config = ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False, all_threads())
    held: dict[str, Any] = {"result": None}
    # the profiler's functions in this closure's cells: ``seal_profiler`` replaces every dict's
    prepare, enable, disable = _prepare, _enable, _disable

    def start() -> None:
        for names in (sentinel, harness, libdevice, launches):
            names.clear()
        try:
            prepare(config, activities)
            enable(config, activities)
        except RuntimeError as error:
            raise Tampered(f"kbx's profiler session could not start ({error})") from None
        with draw_sentinel():
            pass

    def stop() -> dict[str, int]:
        """End the session: every aten operation outside kbx's ranges, by name, and the
        launches marked in it."""
        try:
            held["result"] = result = disable()
        except RuntimeError:
            raise Tampered(
                "kbx's profiler session was stopped during the candidate's run"
            ) from None
        roots = _tree(result)
        named: dict[str, int] = {}
        threads: dict[str, int] = {}
        for event in walk(roots):
            name = _name(event)
            named[name] = named.get(name, 0) + 1
            threads[name] = _thread(event)
        (opening,) = sentinel
        if named.get(opening, 0) != 1 or any(
            named.get(n, 0) > 1 for n in (*harness, *libdevice, *launches)
        ):
            raise Tampered("kbx's profiler session was restarted or one of its ranges forged")
        return count(roots, threads[opening], {*harness, *libdevice}, set(launches))

    def gpu_calls() -> dict[str, int]:
        """The GPU-time figures of the stopped session (torch's own parsing of its events, run
        only once the child found nothing replaced: ``pristine``)."""
        if not gpu or held["result"] is None:
            return {}
        parsed = torch.autograd.profiler.profile(use_device="cuda")
        parsed.kineto_results, parsed._needs_processing = held["result"], True
        events = list(parsed.function_events or [])
        return gpu_times(events, (*harness, *libdevice), kernels)

    def names() -> set[str]:
        """The names of kbx's ranges issued in the current session."""
        return {*sentinel, *harness, *libdevice, *launches}

    return SimpleNamespace(
        start=start, stop=stop, gpu_calls=gpu_calls, harness=draw_harness,
        libdevice=draw_libdevice, launches=draw_launch, kernels=kernels, names=names,
    )  # fmt: skip


def walk(roots: list[Any]) -> Iterator[Any]:
    todo = list(roots)
    while todo:
        event = todo.pop()
        yield event
        todo.extend(_children(event))


def count(roots: list[Any], thread: int, skip: set[str], launches: set[str]) -> dict[str, int]:
    """The aten operations of the tree, nested or not, outside kbx's ranges (``skip``, on kbx's
    ``thread``), by name; the launch marks (``launches``) as ``LAUNCHES``; and a ``fill_`` of
    a view just made (``out[i].fill_(v)``: Python numbers written one by one), or a ``copy_``
    just after a view and a tensor made from a number (``FROM_NUMBER``), as ``WRITTEN``.  The
    ``fill_(0)`` a ``zero_`` calls is the ``zero_``'s own, not counted."""
    calls: dict[str, int] = {}
    todo = [(event, before, None) for event, before in in_order(roots)]
    while todo:
        event, before, parent = todo.pop()
        name = _name(event)
        if name in skip and _thread(event) == thread:
            continue  # kbx's own work: its subtree is left out
        key = LAUNCHES if name in launches else name if name.startswith("aten::") else None
        if key == "aten::fill_" and before[0] in VIEWS:
            key = WRITTEN
        elif key == "aten::fill_" and parent == "aten::zero_":
            key = None
        if key == "aten::copy_" and written_copy(before):
            key = WRITTEN
        if key is not None:
            calls[key] = calls.get(key, 0) + 1
        children = in_order(_children(event))
        # only torch's own zero_, one fill_ and nothing else, is exempt: a Python kernel
        # registered for zero_ that fills many times counts each fill
        own = name == "aten::zero_" and [_name(e) for e, _ in children] == ["aten::fill_"]
        todo.extend((e, b, name if own else None) for e, b in children)
    return calls


def written_copy(before: tuple[str | None, str | None]) -> bool:
    """Whether the two events before a ``copy_`` are a view and a tensor made from a number."""
    return any(a in VIEWS and b in FROM_NUMBER for a, b in (before, before[::-1]))


def in_order(events: list[Any]) -> list[tuple[Any, tuple[str | None, str | None]]]:
    """Each event with the names of the two before it on its thread (siblings, by start; the
    nearest first)."""
    ordered = sorted(events, key=lambda e: (_thread(e), _started(e)))
    paired: list[tuple[Any, tuple[str | None, str | None]]] = []
    last: list[Any] = []
    for event in ordered:
        same = [_name(e) for e in last if _thread(e) == _thread(event)]
        paired.append((event, (same[0] if same else None, same[1] if len(same) > 1 else None)))
        last = [event, *last[:1]]
    return paired


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
