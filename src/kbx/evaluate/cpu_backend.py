"""Gaps of Triton's CPU interpreter that kbx closes in the candidate's child process.

Only applied when the child runs with ``TRITON_INTERPRET=1``.  Multi-config autotuning needs a GPU
to benchmark configurations; on the CPU every configuration computes the same result, so the
first one is kept.
"""

from __future__ import annotations

from typing import Any


def apply() -> None:
    from triton.runtime import autotuner

    original_init = autotuner.Autotuner.__init__

    def init_first_config(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self.configs = self.configs[:1]

    autotuner.Autotuner.__init__ = init_first_config  # type: ignore[method-assign]
