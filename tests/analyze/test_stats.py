"""Rates and tables on synthetic data with planted effects, and the edge cases."""

import numpy as np
import pandas as pd
import pytest

from kbx.analyze import load, speedups, stats, synthetic


@pytest.fixture(scope="module")
def table():
    return synthetic.generate(synthetic.planted(scale=3.0, seed=4))


def test_rates_come_back_near_the_planted_probabilities(table):
    plant = synthetic.planted(scale=3.0)
    rs = stats.resampler(table, 300)
    w = np.array(list(plant.categories.values()), float)
    truth = (plant.cell_p() * w[:, None]).sum(0) / w.sum()
    result = stats.rates(table, rs, by=("method",))
    for method, p in zip(plant.methods, truth, strict=True):
        est = result.row(method=method).stats["exe"]
        assert abs(est.value - p) < 0.05 and est.n == len(table["task_id"].unique())
        assert est.lo <= est.value <= est.hi


def test_category_method_cells_and_totals(table):
    rs = stats.resampler(table, 100)
    result = stats.category_method(table, rs)
    cell = result.row(category="Math", method="geak").stats["exe"]
    assert cell.den == 38 * 3
    total = result.row(category="Math", method="all").stats["exe"]
    assert total.den == 38 * 3 * 5


def all_fail_table():
    table = synthetic.generate(synthetic.planted(rounds=2))
    for col in ("call_ok", "exe_ok", "perf_ok"):
        table[col] = False
    table["speedup"] = np.nan
    return table


def test_all_fail():
    table = all_fail_table()
    rs = stats.resampler(table, 50)
    assert stats.rates(table, rs).rows[0].stats["exe"].value == 0.0
    assert stats.solved(table, rs).row(category="all").stats["all_fail"].value == 1.0
    quant = stats.quantization(table, rs).row(method="all").stats["exe"]
    assert (quant.num, quant.den) == (0.0, 30.0)
    agg = speedups.aggregates(table, rs).rows
    assert all(np.isnan(r.stats["mean"].value) for r in agg)


def test_one_method_one_round():
    plant = synthetic.planted(methods=["only"], method_effect=[0.0])
    table = synthetic.generate(plant)
    rs = stats.resampler(table, 50)
    assert len(stats.rates(table, rs).rows) == 1
    solved = stats.solved(table, rs).row(category="all").stats
    assert solved["solved_by_any"].value == solved["solved_by_all"].value


def test_empty_input():
    table = load.load([], pd.Series(dtype=object))
    rs = stats.resampler(table, 10)
    result = stats.rates(table, rs)
    assert result.n == 0 and result.rows == []
    for f in (
        stats.category_method,
        stats.solved,
        stats.quantization,
        speedups.aggregates,
        speedups.slower_share,
        speedups.fast_p,
        speedups.at_k,
    ):
        assert f(table, rs).n == 0
