"""Lower bounds of what a kernel must move, for the tasks' ``bytes_moved`` where the inputs are
drawn at random: distinct rows among indices drawn with repeats, elements a random mask keeps.

``bytes_moved`` must never exceed the bytes an honest kernel has to move (each needed input
element read once, each output element written once), or the roofline's floor turns a right
kernel into ``too_fast`` (docs/design/timing.md, Declared bytes).  A count that depends on the
draw is taken 3 standard deviations below its expectation: below the draw's own count for any
case of the suite, by far (``kbx.audit.traffic`` measures the draws).
"""

from __future__ import annotations

import math


def distinct(n: int, m: float, groups: int = 1) -> float:
    """How many distinct values ``m`` draws, uniform with repeats from ``n`` values, take at
    least, summed over ``groups`` independent sets of draws (the rows an index of length m names
    in a dim of size n; a gather's lines): 3 sigma under the mean."""
    m = math.floor(m)
    if m <= 0 or n <= 0 or groups <= 0:
        return 0.0
    if n == 1:
        return float(groups)
    miss1 = math.exp(m * math.log1p(-1 / n))  # P(a given value is never drawn)
    miss2 = math.exp(m * math.log1p(-2 / n)) if n > 2 else 0.0
    expected = n * (1 - miss1)
    variance = n * miss1 + n * (n - 1) * miss2 - (n * miss1) ** 2
    low = groups * expected - 3 * math.sqrt(groups * max(variance, 0.0))
    return max(float(groups), low)


def share(p: float, n: int) -> float:
    """The share of ``n`` independent draws, each true with probability ``p``, that comes out
    true at least (the elements a random mask of density p keeps): 3 sigma under the mean."""
    if n <= 0 or p <= 0:
        return 0.0
    return max(0.0, p - 3 * math.sqrt(p * (1 - p) / n))
