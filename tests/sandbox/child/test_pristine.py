"""What the candidate leaves behind is found (``pristine.snapshot``), and kbx's own work runs
with every mode off and no collection (``pristine.enter``/``leave``)."""

from __future__ import annotations

import builtins
import gc
import threading

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from kbx.sandbox.child import handling, pristine


class Seen(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.calls += 1
        return func(*args, **(kwargs or {}))


class Dispatched(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.calls += 1
        return func(*args, **(kwargs or {}))


def test_a_mode_left_active_is_found_and_acts_nowhere_in_the_shield():
    snapshot = pristine.snapshot()
    assert snapshot.quick() == []
    mode, dispatched = Seen(), Dispatched()
    with mode, dispatched:
        assert any("mode" in p for p in snapshot.quick())
        state = pristine.enter()
        try:
            collecting = gc.isenabled()
            copy = handling.to_host(torch.ones(3))
        finally:
            pristine.leave(state)
        assert mode.calls == 0 and dispatched.calls == 0 and not collecting
        assert copy.sum().item() == 3.0
    assert snapshot.quick() == []


def test_a_kernel_registered_for_an_operation_kbx_runs_is_found():
    snapshot = pristine.snapshot()
    library = torch._C._dispatch_library("IMPL", "aten", "", "test", 1)
    library.impl("clone", "CPU", lambda x, memory_format=None: x, False)
    try:
        assert any("aten::clone" in p for p in snapshot.quick())
    finally:
        del library
    assert snapshot.quick() == []


def test_a_thread_left_running_is_found():
    snapshot = pristine.snapshot()
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert any("thread" in p for p in snapshot.quick())
    finally:
        stop.set()
        thread.join()
    assert snapshot.quick() == []


def test_a_replaced_builtin_tensor_method_or_kbx_function_is_found():
    snapshot = pristine.snapshot()
    original, fresh = builtins.isinstance, handling.fresh
    detach = torch.Tensor.__dict__.get("detach")
    try:
        builtins.isinstance = lambda obj, cls: original(obj, cls)
        torch.Tensor.detach = lambda self: self  # type: ignore[method-assign]
        handling.fresh = lambda x: x
        found = " ".join(snapshot.full())
    finally:
        builtins.isinstance = original
        if detach is None:
            del torch.Tensor.detach
        else:
            torch.Tensor.detach = detach  # type: ignore[method-assign]
        handling.fresh = fresh
    assert "builtins.isinstance" in found and "torch.Tensor.detach" in found
    assert "kbx.sandbox.child.handling.fresh" in found


def test_what_the_standard_library_caches_on_a_class_is_no_patch():
    """Pickling or deep-copying a tensor caches ``__slotnames__`` on its class (copyreg)."""
    import copy
    import io

    snapshot = pristine.snapshot()
    copy.deepcopy(torch.ones(2))
    torch.save(torch.ones(2), io.BytesIO())
    assert snapshot.full() == []
