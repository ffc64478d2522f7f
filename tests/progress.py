"""Progress lines for tests that run for minutes (the whole suite in one test), which under
``pytest -q`` showed nothing until they ended: a line past pytest's capture every ``EVERY_S``."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

EVERY_S = 30.0


def progress(
    capsys: pytest.CaptureFixture[str], what: str, total: int, every_s: float = EVERY_S
) -> Callable[[str], None]:
    """A callback for each finished item (called from the test's thread, where the capture can
    be lifted): ``what: 40/184 done in 95 s, last Math/rsqrt: passed`` at most every
    ``every_s`` seconds, and at the last item."""
    start = last = time.monotonic()
    done, lines = 0, 0

    def step(item: str) -> None:
        nonlocal done, last, lines
        done += 1
        now = time.monotonic()
        if now - last < every_s and done < total:
            return
        last, lines = now, lines + 1
        line = f"  {what}: {done}/{total} done in {now - start:.0f} s, last {item}"
        with capsys.disabled():  # the first line leaves the row of pytest's dots
            print(("\n" if lines == 1 else "") + line, flush=True)

    return step
