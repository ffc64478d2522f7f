"""The pass rate's reading of a record's round and sample (``kbx.core.passrate.level``): whole
numbers only, whatever a submission's meta holds (tests/test_fuzz.py found ':' and infinity)."""

from __future__ import annotations

import math

import pytest

from kbx.core.passrate import final, level


@pytest.mark.parametrize(
    "value, want",
    [(3, 3), ("2", 2), (4.0, 4), (True, 1), (None, 0), (":", 0), (1.5, 0), (math.inf, 0),
     (-math.inf, 0), (math.nan, 0), ("1e400", 0), ([1], 0), ({"a": 1}, 0)],
)  # fmt: skip
def test_a_round_is_a_whole_number_or_0(value, want):
    assert level({"round": value}, "round") == want
    assert level({"meta": {"round": value}}, "round") == want


def test_the_final_round_ignores_rounds_that_are_no_numbers():
    records = [
        {"task_id": "Math/add", "verdict": "passed", "meta": {"round": math.inf}},
        {"task_id": "Math/add", "verdict": "mismatch", "meta": {"round": 2}},
    ]
    assert [r["verdict"] for r in final(records)] == ["mismatch"]
