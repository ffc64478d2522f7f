"""The child's evidence of host data moved in bulk (``stages``): how much a case allows, and what
the evidence reports beyond it (tests/exploits/item_reads_scalar, handed_numbers and
handed_number_chunks run the whole path)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from kbx.sandbox.child import launches, opcheck, stages
from kbx.suite.task import Case


def context(calls: dict[str, int]) -> SimpleNamespace:
    return SimpleNamespace(
        recorder=SimpleNamespace(stop=lambda: dict(calls)),
        transfers={},
        spent={"evidence": 0.0},
        state=launches.new_state(),
    )


def test_a_case_allows_one_value_in_sixteen_of_its_inputs_elements_and_at_least_256():
    def plan(numel: int, refill: bool) -> object:
        inputs = SimpleNamespace(args=(torch.zeros(numel),), kwargs={"n": 3})
        case = Case((numel,), seed=1)
        again = SimpleNamespace(args=(torch.zeros(numel),), kwargs={}) if refill else None
        return SimpleNamespace(
            place=SimpleNamespace(timed=False),
            cases=[(case, inputs)],
            bench_index=[],
            bench=[],
            refills=[again],
        )

    task = SimpleNamespace(random=False)
    small = stages.items(task, plan(100, refill=False))[0]
    large = stages.items(task, plan(16_000, refill=True))[0]
    assert small[-1] == (256, 256)  # the floor, one call
    assert large[-1] == (2 * 1000, 2 * 1000)  # two inputs (the refill's), two calls


@pytest.mark.parametrize(
    ("calls", "found"),
    [
        ({"aten::item": 300, "aten::_local_scalar_dense": 300}, {opcheck.READ: 300}),
        ({"aten::item": 256, "aten::_local_scalar_dense": 256}, {}),
        ({"aten::full": 200, "aten::fill_": 100}, {opcheck.MADE: 300}),
        ({"aten::full": 256}, {}),
    ],
)
def test_elements_read_into_python_or_tensors_made_from_numbers_beyond_the_case_s_allowance(
    calls: dict[str, int], found: dict[str, int]
):
    got = stages.evidence(context(calls), 0, (256, 256))
    assert {k: v for k, v in got.items() if k.startswith("kbx::")} == found


def test_numbers_handed_to_kernels_beyond_the_case_s_allowance_refuse_the_launch():
    state = launches.new_state()
    state["allow"] = 4
    launches.count_values(state, (torch.zeros(2), 1, 2.0), {"BLOCK": 64, "grid": (9, 9, 9)})
    assert state["numbers"] == {1, 2.0, 64} and state["refused"] == []
    launches.count_values(state, (), {}, (5,))  # a grid's sizes reach the kernel too
    assert state["numbers"] == {1, 2.0, 64, 5}
    with pytest.raises(RuntimeError, match="distinct Python numbers"):
        launches.count_values(state, (3, 4.0), {})
    assert "6 distinct" in state["refused"][0]
    wide = launches.new_state()
    with pytest.raises(RuntimeError, match="65 values handed to one kernel launch"):
        launches.count_values(wide, (tuple([0.0] * 65),), {})
    timing = launches.new_state()
    timing["allow"] = None  # kbx times: no evidence is gathered, nothing is counted
    launches.count_values(timing, (tuple([0.0] * 65),), {})
    assert timing["numbers"] == set() and timing["refused"] == []
