"""kbx: an evaluation harness for LLM-generated Triton kernels (the KernelBench-X suite).

``kbx.Evaluator`` is the public seam (``kbx.run.evaluator``); importing ``kbx`` starts nothing.
"""

from __future__ import annotations

from typing import Any

from kbx.core.version import __version__

__all__ = ["Evaluator", "Tuning", "__version__"]


def __getattr__(name: str) -> Any:
    """``kbx.Evaluator`` and ``kbx.Tuning``, imported on first use (torch is heavy)."""
    if name == "Evaluator":
        from kbx.run.evaluator import Evaluator

        return Evaluator
    if name == "Tuning":
        from kbx.core.config import Tuning

        return Tuning
    raise AttributeError(f"module 'kbx' has no attribute {name!r}")
