"""Frozen copies of kbx's modules (``bound``) find what was there before the candidate's import,
whatever it rebinds afterwards."""

from __future__ import annotations

import builtins

from kbx.sandbox.child import bound, handling


def test_frozen_functions_keep_their_names_builtins_and_cells():
    frozen = bound.freeze()
    kind = frozen.get("kbx.sandbox.child.handling", "kind")
    original_kind, original_len = handling.kind, builtins.len
    try:
        handling.kind = lambda x: "other"
        handling._Tensor = object
        builtins.len = lambda x: 0
        to_host = frozen.get("kbx.sandbox.child.handling", "to_host")
        assert kind(()) == "tuple" and to_host((1, 2)) == (1, 2)
        assert frozen.get("kbx.sandbox.child.bound", "freeze").__globals__ is not vars(bound)
    finally:
        handling.kind, builtins.len = original_kind, original_len
        import torch

        handling._Tensor = torch.Tensor


def test_a_sealed_function_reaches_only_its_gate():
    def gate():  # a generator standing for a launch gate
        answer = None
        while True:
            args = yield answer
            answer = (True, len(args))

    g = gate()
    next(g)
    sealed = bound.sealed(g, CODE, "call")
    assert sealed(1, 2, 3) == 3
    assert sealed.__globals__ == {"__builtins__": {}}
    assert [c.cell_contents for c in sealed.__closure__] == [g]


def _code():  # type: ignore[no-untyped-def]
    gate = None

    def call(*args):  # type: ignore[no-untyped-def]
        ok, value = gate.send(args)
        if ok:
            return value
        raise value

    return call.__code__


CODE = _code()
