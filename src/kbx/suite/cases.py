"""Compact case tables: a constructor that names a task's case parameters once, so that each case
of the table is one short line of values.

``table("dim", "m")`` returns ``case(shape, seed, dim, m[, dist], **more)``, which is
``Case(shape, seed=seed, dist=dist, params={"dim": dim, "m": m, **more})``; ``dist`` (normal when
left out) may come positionally after the named values or as a keyword, and an int shape is 1-D.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kbx.suite.task import Case


def table(*names: str) -> Callable[..., Case]:
    """A case constructor whose values after (shape, seed) are the parameters ``names``."""

    def case(shape: int | Sequence[int], seed: int, *values: Any, **more: Any) -> Case:
        if len(values) not in (len(names), len(names) + 1):
            raise TypeError(f"a case takes shape, seed, {', '.join(names)} and optionally dist")
        dist = values[len(names)] if len(values) > len(names) else more.pop("dist", "normal")
        params = dict(zip(names, values[: len(names)], strict=True), **more)
        dims = (shape,) if isinstance(shape, int) else tuple(shape)
        return Case(dims, seed=seed, dist=dist, params=params)

    return case
