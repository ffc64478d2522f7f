"""A verl custom reward function: ``compute_score(data_source, solution_str, ground_truth,
extra_info)``, with the task id as ``ground_truth``.  The service comes from verl's
``custom_reward_function.reward_kwargs`` (url, token, tier, shape):

    custom_reward_function.path=<kbx>/src/kbx/rewards/verl.py
    custom_reward_function.name=compute_score
    +custom_reward_function.reward_kwargs.url=http://127.0.0.1:8000

``compute_score_batch`` takes lists, for verl's batch reward manager (one request per batch).
"""

from __future__ import annotations

from typing import Any

from kbx.rewards.common import score, shape_of
from kbx.rewards.shapes import Shape

DEFAULT_URL = "http://127.0.0.1:8000"


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: dict[str, Any] | None = None,
    url: str = DEFAULT_URL,
    token: str | None = None,
    tier: str = "quick",
    shape: Shape | dict[str, Any] | str | None = None,
) -> dict[str, Any]:
    """The reward of one answer, with the verdict and speedup verl logs beside it."""
    [scored] = compute_score_batch(
        [data_source], [solution_str], [ground_truth], [extra_info], url, token, tier, shape
    )
    return scored


def compute_score_batch(
    data_sources: list[str],
    solution_strs: list[str],
    ground_truths: list[str],
    extra_infos: list[dict[str, Any] | None],
    url: str = DEFAULT_URL,
    token: str | None = None,
    tier: str = "quick",
    shape: Shape | dict[str, Any] | str | None = None,
) -> list[dict[str, Any]]:
    """``compute_score`` of each answer, in one request."""
    scored = score(url, token, ground_truths, solution_strs, tier, shape_of(shape))
    return [
        {
            "score": 0.0 if value is None else value,
            "verdict": record["verdict"],
            "speedup": record.get("speedup") or 0.0,
            "harness_error": value is None,
        }
        for value, record in scored
    ]
