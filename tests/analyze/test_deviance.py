"""Explained deviance: closed form against the GLM, and the planted shares."""

import numpy as np
import pytest

from kbx.analyze import deviance, stats, synthetic


@pytest.fixture(scope="module")
def big():
    return synthetic.planted(scale=6.0, seed=7), synthetic.generate(
        synthetic.planted(scale=6.0, seed=7)
    )


def test_closed_form_equals_the_glm(big):
    _, table = big
    frame = stats.outcomes(table)
    rs = stats.resampler(table, 20)
    for factor in ("category", "method"):
        closed, _ = deviance.factor_deviance(rs, frame, factor, "exe_ok")
        glm, _ = deviance.glm_deviance(frame, "exe_ok", [factor])
        assert closed == pytest.approx(glm, rel=1e-6)


def test_planted_shares_come_back(big):
    plant, table = big
    rs = stats.resampler(table, 200)
    result = deviance.deviance(table, rs)
    truth = plant.shares()
    marginal = {s.factor: s for s in result.shares if s.kind == "marginal"}
    assert abs(marginal["category"].share.value - truth["category"]) < 0.02
    assert abs(marginal["method"].share.value - truth["method"]) < 0.01
    assert marginal["category"].share.value > 2 * marginal["method"].share.value
    assert marginal["category"].df == 14 and marginal["method"].df == 4
    assert marginal["category"].p_value < 1e-6
    partial = {s.factor: s for s in result.shares if s.kind == "partial"}
    assert partial["method"].share.value == pytest.approx(marginal["method"].share.value, abs=0.01)
    assert result.d_both <= min(result.d_category, result.d_method)


def test_all_fail_category_separates_but_stays_finite():
    table = synthetic.generate(synthetic.planted(seed=2))
    table.loc[table["category"] == "Quantization", "exe_ok"] = False
    result = deviance.deviance(table, stats.resampler(table, 20))
    assert result.separation and np.isfinite(result.d_both)
    assert all(np.isfinite(s.share.value) for s in result.shares)
