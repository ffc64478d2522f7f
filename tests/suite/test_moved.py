"""The draws' lower bounds, 3 sigma under the mean: below all but a rare draw (the suite's own
draws are measured by tests/audit/test_traffic.py), and not far under the mean."""

import pytest
import torch

from kbx.suite.moved import distinct, share


@pytest.mark.parametrize(
    ("n", "m", "groups"), [(11, 5, 1), (1023, 100, 1), (64, 64, 50), (8, 3, 20)]
)
def test_distinct_is_below_all_but_rare_draws(n, m, groups):
    gen = torch.Generator().manual_seed(0)
    counts = [
        sum(int(torch.randint(0, n, (m,), generator=gen).unique().numel()) for _ in range(groups))
        for _ in range(300)
    ]
    bound = distinct(n, m, groups)
    assert sum(c < bound for c in counts) <= 3  # 1% of the draws at most
    assert 0.45 * sum(counts) / len(counts) <= bound <= sum(counts) / len(counts)


def test_distinct_at_the_benchmark_s_index_fill_():
    """4,096 draws from 8,192 rows name ~3,223 of them: 79%, as the H100 run found."""
    assert 3100 < distinct(8192, 4096) < 3223
    assert distinct(8192, 0) == 0.0 and distinct(1, 5) == 1.0


def test_share_is_below_all_but_rare_draws():
    gen = torch.Generator().manual_seed(1)
    for p, n in ((0.02, 8385), (0.5, 1000), (0.97, 500)):
        counts = [float((torch.rand(n, generator=gen) < p).double().mean()) for _ in range(300)]
        assert sum(c < share(p, n) for c in counts) <= 3  # 1% of the draws at most
        assert share(p, n) <= p
    assert share(0.0, 10) == 0.0
