"""The timing engine's statistics, with a fake clock (the CUDA clock needs a GPU)."""

import itertools
import random

from kbx.evaluate.timing import measure, median_ci


def test_median_ci_brackets_the_median():
    xs = list(range(1, 102))
    lo, hi = median_ci(xs)
    assert lo < 51 < hi
    assert hi - lo < 25


def test_measure_stops_when_the_interval_is_tight():
    clock = lambda call: 1.0 + random.Random(len(str(call))).random() * 1e-4  # noqa: E731
    t = measure([lambda: None], clock)
    assert t.reps == 10 and abs(t.median_ms - 1.0) < 1e-3
    assert t.ci_low_ms <= t.median_ms <= t.ci_high_ms


def test_measure_rotates_calls_and_respects_max_reps():
    seen = []
    noisy = itertools.cycle([1.0, 2.0, 3.0, 10.0])

    def clock(call):
        seen.append(call)
        return next(noisy)

    calls = [lambda: 1, lambda: 2, lambda: 3]
    t = measure(calls, clock, budget_ms=1e9, max_reps=50)
    assert t.reps == 50
    assert seen[:6] == calls + calls
