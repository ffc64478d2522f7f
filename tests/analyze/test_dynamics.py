"""Iteration dynamics: the four groups and the planted rescued-slower effect."""

from kbx.analyze import dynamics, stats, synthetic


def test_rescued_kernels_are_slower_than_persistent_ones():
    plant = synthetic.planted(scale=3.0, rounds=3, seed=5)
    table = synthetic.generate(plant)
    rs = stats.resampler(table, 200)
    result = dynamics.transitions(table, rs)
    assert len(result) == 5 * 2
    for tr in result:
        assert sum(e.num for e in tr.shares.values()) == tr.n
    first = [t for t in result if t.start == 0]
    rescued = sum(t.speedups.row(group="rescued").stats["mean"].value for t in first) / 5
    persistent = sum(t.speedups.row(group="persistent").stats["mean"].value for t in first) / 5
    assert abs(persistent - plant.persistent_mean()) < 0.15
    assert abs(rescued - plant.rescued_factor * plant.persistent_mean()) < 0.2
    assert rescued < persistent


def test_one_round_has_no_transitions():
    table = synthetic.generate(synthetic.planted())
    assert dynamics.transitions(table, stats.resampler(table, 10)) == []
