"""kbx's own tensor handling in the child runs no code of the candidate's: outputs are read by
exact type, with the base types' own iterators and slots, and tensors with TensorBase's C
methods (``handling``)."""

from __future__ import annotations

import numpy as np
import torch
import triton.language as tl

from kbx.sandbox.child import handling


def test_outputs_are_copied_without_running_the_candidate_s_methods():
    ran = []

    class Lazy(tuple):
        def __iter__(self):  # type: ignore[override]
            ran.append("__iter__")
            return iter(())

    class Spoof:
        @property
        def __class__(self):  # type: ignore[override]
            ran.append("__class__")
            return tuple

    class Number(int):
        def __index__(self) -> int:
            ran.append("__index__")
            return 0

    out = torch.ones(3)
    got = handling.to_host(Lazy((out, Number(7), Spoof(), out.as_subclass(Sub))))
    assert ran == []
    assert isinstance(got, tuple) and torch.equal(got[0], out) and got[0] is not out
    assert got[1] == 7 and type(got[1]) is int
    assert got[2] == "<object of type Spoof>" and got[3] == "<tensor subclass Sub>"


class Sub(torch.Tensor):
    pass


def test_copies_use_tensorbase_even_when_torch_tensor_is_patched():
    clone = torch.Tensor.__dict__.get("clone")
    torch.Tensor.clone = lambda self, *a, **k: torch.zeros(1)  # type: ignore[method-assign]
    try:
        args, kwargs = handling.fresh_arguments((torch.ones(2),), {"w": torch.ones(1)})
    finally:
        if clone is None:
            del torch.Tensor.clone
        else:
            torch.Tensor.clone = clone  # type: ignore[method-assign]
    assert torch.equal(args[0], torch.ones(2)) and torch.equal(kwargs["w"], torch.ones(1))


def test_outputs_in_memory_torch_did_not_allocate_are_counted():
    assert handling.host_memory((torch.ones(2), torch.from_numpy(np.ones(2)))) == 1
    assert handling.host_memory(torch.empty(3)) == 0


def test_outputs_without_a_storage_are_left_to_the_store_not_a_crash():
    """A sparse or nested output has no storage to ask: counting host memory must not raise (the
    child crashed, ``crashed``), the store names it (``outputs.storable``: ``wrong_shape``)."""
    sparse = torch.ones(3).to_sparse()
    nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], layout=torch.jagged)
    assert handling.host_memory((sparse, nested, torch.ones(1))) == 0


def test_a_launchs_values_are_its_arguments_and_the_items_of_its_tuples_and_lists():
    ran = []

    class Loud(tuple):
        def __iter__(self):  # type: ignore[override]
            ran.append("__iter__")
            return iter(())

    numbers: set[object] = set()
    x = torch.zeros(3)
    args = (x, 7, 2.5, True, "s", Loud((1.0, 2.0, x)), [np.float32(0.5), (3, 3)])
    # five plain arguments, the tuple's 3 items, the list's float32 and its tuple's 2 items,
    # a constexpr and BLOCK
    got = handling.argument_values(args, {"c": tl.constexpr(9.5), "BLOCK": 64}, numbers)
    assert got == 5 + 3 + 3 + 1 + 1
    assert ran == []
    assert {7, 2.5, 1.0, 2.0, 3, 9.5, 64} <= numbers and len(numbers) == 8  # with the float32
