"""Speedup aggregates, fast_p, and the unbiased pass@k against brute-force enumeration."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from kbx.analyze import speedups, stats
from kbx.analyze.load import finish


def brute(outcomes, k):
    """The share of k-subsets of the samples that hold a success."""
    subsets = list(itertools.combinations(outcomes, k))
    return sum(any(s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", [1, 3, 5, 7])
def test_unbiased_pass_at_k_matches_enumeration(n):
    rng = np.random.default_rng(n)
    for c in range(n + 1):
        outcomes = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            got = speedups.unbiased(np.array([n]), np.array([c]), k)[0]
            assert got == pytest.approx(brute(outcomes, k)), (n, c, k)
    assert rng is not None


def hand_table(speed, samples=1):
    """Two tasks, one method, ``samples`` samples; speed[t][s] is NaN for a failure."""
    rows = []
    for t, task in enumerate(["A/x", "A/y"]):
        for s in range(samples):
            v = speed[t][s]
            ok = not math.isnan(v)
            rows.append(
                {
                    "task_id": task,
                    "method": "m",
                    "model": "",
                    "round": 0,
                    "sample": s,
                    "gpu": "g",
                    "verdict": "passed" if ok else "mismatch",
                    "call_ok": True,
                    "exe_ok": ok,
                    "perf_ok": ok,
                    "speedup": v,
                    "kernel_ms": 1.0 if ok else np.nan,
                    "eager_ms": v if ok else np.nan,
                }
            )
    return finish(pd.DataFrame(rows), pd.Series(["A", "A"], index=["A/x", "A/y"]), [])


def test_aggregates_and_fast_p_by_hand():
    table = hand_table([[4.0], [0.5]])
    rs = stats.resampler(table, 100)
    row = speedups.aggregates(table, rs).row(method="m").stats
    assert row["mean"].value == 2.25 and row["geomean"].value == pytest.approx(math.sqrt(2))
    assert row["global"].value == 4.5 / 2 and row["median"].value == 0.5  # lower median
    fast = speedups.fast_p(table, rs).row(method="m").stats
    assert fast["fast_0"].value == 1.0 and fast["fast_1"].value == 0.5 and fast["fast_2"].n == 2
    assert speedups.slower_share(table, rs).rows[0].stats["slower"].value == 0.5


def test_fast_p_with_95_percent_confidence_counts_the_interval_s_low_end():
    """A 1.5x kernel whose interval reaches down to 0.9x is faster than eager, but not with
    95% confidence; a 4x one with [3.5, 4.5] is; a table without intervals counts none."""
    table = hand_table([[4.0], [1.5]])
    table["speedup_low"], table["speedup_high"] = [3.5, 0.9], [4.5, 2.0]
    rs = stats.resampler(table, 100)
    fast = speedups.fast_p(table, rs).row(method="m").stats
    assert fast["fast_1"].value == 1.0 and fast["sure_1"].value == 0.5
    assert fast["sure_0"].value == 1.0 and fast["sure_2"].value == 0.5
    bare = speedups.fast_p(hand_table([[4.0], [1.5]]), rs).row(method="m").stats
    assert bare["fast_1"].value == 1.0 and bare["sure_1"].value == 0.0


def test_efficiency_averages_the_sol_score_over_the_kernels_that_have_one():
    table = hand_table([[4.0], [1.5]])
    table["sol_score"], table["roofline_share"] = [0.8, np.nan], [0.5, np.nan]
    rs = stats.resampler(table, 100)
    row = speedups.efficiency(table, rs).row(method="m").stats
    assert row["sol_score"].value == 0.8 and row["sol_share"].value == 0.5
    assert row["sol_score"].n == 1  # the one task with a roofline
    bare = hand_table([[4.0], [1.5]])
    assert speedups.efficiency(bare, rs).rows[0].stats["sol_score"].n == 0


def test_at_k_averages_tasks_and_caps_k():
    nan = float("nan")
    table = hand_table([[2.0, nan, nan], [nan, nan, nan]], samples=3)
    rs = stats.resampler(table, 50)
    row = speedups.at_k(table, rs, ks=(1, 2, 10), grid=(1.0,)).row(method="m").stats
    assert row["pass@1"].value == pytest.approx(1 / 6)
    assert row["pass@2"].value == pytest.approx((2 / 3) / 2)
    assert row["pass@10"].value == 0.5  # k capped at 3 samples
    assert row["fast_1@2"].value == row["pass@2"].value
