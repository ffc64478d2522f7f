"""Cross-hardware spread of kernels and of the eager baseline."""

import pytest

from kbx.analyze import spread, stats, synthetic
from kbx.analyze.load import suite_tasks


def test_spread_over_gpus():
    plant = synthetic.planted(gpus=3, gpu_sd=0.2, seed=3)
    table = synthetic.generate(plant)
    rs = stats.resampler(table, 100)
    result = spread.hardware(table, rs)
    assert result.gpus == ["gpu0", "gpu1", "gpu2"]
    assert result.kernels.n == int(table[table["gpu"] == "gpu0"]["perf_ok"].sum())
    assert 1.0 <= result.kernels.median.value <= result.kernels.p90.value <= result.kernels.max
    assert result.eager.median.value > 1.0
    assert result.per_gpu.row(gpu="gpu1", method="geak").stats["mean"].n > 0


def test_one_gpu_has_no_spread():
    table = synthetic.generate(synthetic.planted())
    result = spread.hardware(table, stats.resampler(table, 10))
    assert result.kernels.n == 0 and result.eager.n == 0


def test_released_eager_timings():
    timings = {"a100": {"add": [{"ms": 1.0}, {"ms": 2.0}]}, "h800": {"add": [{"ms": 6.0}]}}
    table = spread.eager_table(timings, suite_tasks())
    assert table.loc["Math/add", "a100"] == 3.0
    assert table.loc["Math/add"].max() / table.loc["Math/add"].min() == pytest.approx(2.0)
