"""What the adapters share: a client per service, the text of a model's answer, and a batch of
answers scored under a shape."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from kbx.client import AsyncClient, Client
from kbx.rewards.shapes import Shape, reward


@functools.cache
def client(url: str, token: str | None) -> Client:
    """One client per service and token, kept for the process (a trainer calls many times)."""
    return Client(url, token=token)


def answer_text(completion: Any) -> str:
    """A completion as text: a string, or a chat (a list of messages) whose last assistant
    message is the answer."""
    if isinstance(completion, str):
        return completion
    replies = [m for m in completion if m.get("role") == "assistant"] or list(completion)
    return str(replies[-1].get("content", "")) if replies else ""


def shape_of(shape: Shape | dict[str, Any] | str | None) -> Shape:
    """A shape from a Shape, its fields as a dict (a trainer's config) or its kind's name."""
    if isinstance(shape, Shape):
        return shape
    if isinstance(shape, str):
        return Shape.kevin() if shape == "kevin" else Shape(kind=shape)  # type: ignore[arg-type]
    return Shape.model_validate(shape or {})


def score(
    url: str,
    token: str | None,
    tasks: Sequence[str],
    answers: Sequence[str],
    tier: str,
    shape: Shape,
) -> list[tuple[float | None, dict[str, Any]]]:
    """Each answer's reward and result record, in order, from one batch."""
    jobs = client(url, token).evaluate(list(zip(tasks, answers, strict=True)), tier=tier)
    return [(reward(job["result"], shape), job["result"]) for job in jobs]


async def ascore(
    http: AsyncClient, task_id: str, answer: str, tier: str, shape: Shape
) -> tuple[float | None, dict[str, Any]]:
    [job] = await http.evaluate([(task_id, answer)], tier=tier)
    return reward(job["result"], shape), job["result"]
