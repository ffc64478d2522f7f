"""The stratified bootstrap: weights, point estimates, and interval coverage."""

import numpy as np
import pandas as pd

from kbx.analyze.bootstrap import Resampler

SUITE = pd.Series(["a"] * 30 + ["b"] * 10, index=[f"t{i:02d}" for i in range(40)])


def test_each_resample_keeps_category_sizes():
    rs = Resampler(SUITE, resamples=50, seed=1)
    a = SUITE.sort_index().to_numpy() == "a"
    assert (rs.weights[:, a].sum(1) == 30).all() and (rs.weights[:, ~a].sum(1) == 10).all()


def test_ratio_and_quantile_points_are_the_plain_statistics():
    rs = Resampler(SUITE, resamples=200)
    values = np.arange(40.0)
    frame = pd.DataFrame({"task_id": SUITE.index, "v": values, "one": 1.0})
    est = rs.ratio(rs.matrix(frame, "v", ()), rs.matrix(frame, "one", ()))[0]
    assert est.value == values.mean() and est.lo < est.value < est.hi and est.n == 40
    med = rs.quantile(values, rs.positions(frame["task_id"]), 0.5)
    assert med.value == 19.0 and med.lo <= 19.0 <= med.hi


def test_interval_covers_the_true_rate_about_95_percent():
    rng = np.random.default_rng(3)
    p = np.where(SUITE.sort_index().to_numpy() == "a", 0.3, 0.8)
    truth = p.mean()
    hits = 0
    reps = 300
    rs = Resampler(SUITE, resamples=400, seed=2)
    for _ in range(reps):
        frame = pd.DataFrame(
            {
                "task_id": SUITE.sort_index().index,
                "y": (rng.random((8, 40)) < p).mean(0),
                "one": 1.0,
            }
        )
        est = rs.ratio(rs.matrix(frame, "y", ()), rs.matrix(frame, "one", ()))[0]
        hits += est.lo <= truth <= est.hi
    assert 0.90 <= hits / reps <= 0.99
