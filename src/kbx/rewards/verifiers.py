"""A verifiers-style environment: a dataset of the suite's prompts (the task id as ``answer``)
and a rubric whose reward functions evaluate the completion through ``kbx serve``.

With the ``verifiers`` package installed, ``load_environment`` returns a ``vf.SingleTurnEnv``
holding ``KernelRubric``'s functions; without it, a ``KernelEnv`` of the same shape (a dataset
and a rubric with ``score``), which is enough to score rollouts from any trainer.
"""

from __future__ import annotations

from typing import Any

from kbx.client import AsyncClient
from kbx.rewards.common import answer_text, ascore, shape_of
from kbx.rewards.shapes import Shape


class KernelRubric:
    """Reward functions in verifiers' form (``completion, answer, **kwargs -> float``): the
    shaped reward (weight 1) and whether the kernel passed (weight 0, for the logs)."""

    def __init__(self, url: str, token: str | None = None, tier: str = "quick", shape: Any = None):
        self.url, self.token, self.tier, self.shape = url, token, tier, shape_of(shape)
        self.funcs = [self.kernel_reward, self.kernel_passed]
        self.weights = [1.0, 0.0]

    async def evaluate(self, completion: Any, answer: str) -> tuple[float | None, dict[str, Any]]:
        async with AsyncClient(self.url, token=self.token) as http:
            return await ascore(http, answer, answer_text(completion), self.tier, self.shape)

    async def kernel_reward(self, completion: Any, answer: str, **kwargs: Any) -> float:
        value, _ = await self.evaluate(completion, answer)
        return 0.0 if value is None else value

    async def kernel_passed(self, completion: Any, answer: str, **kwargs: Any) -> float:
        _, record = await self.evaluate(completion, answer)
        return 1.0 if record["verdict"] == "passed" else 0.0

    async def score(self, completion: Any, answer: str) -> dict[str, float]:
        """Every function's value and the weighted total, as a verifiers rubric reports."""
        values = {f.__name__: await f(completion, answer) for f in self.funcs}
        total = sum(w * v for w, v in zip(self.weights, values.values(), strict=True))
        return {**values, "reward": total}


class KernelEnv:
    """A single-turn environment without the verifiers package: the dataset and the rubric."""

    def __init__(self, dataset: list[dict[str, Any]], rubric: KernelRubric) -> None:
        self.dataset, self.rubric = dataset, rubric


def prompts(tasks: str | None = None) -> list[dict[str, Any]]:
    """One row per task: the prompt as a chat, the task id as the answer."""
    from kbx.suite import select
    from kbx.suite.prompt import render

    return [
        {"prompt": [{"role": "user", "content": render(t)}], "answer": t.id, "task": t.id}
        for t in select(tasks)
    ]


def load_environment(
    url: str = "http://127.0.0.1:8000",
    token: str | None = None,
    tasks: str | None = None,
    tier: str = "quick",
    shape: Shape | dict[str, Any] | str | None = None,
) -> Any:
    """The environment over the tasks matching ``tasks`` (a glob; None: all 184)."""
    rubric = KernelRubric(url, token, tier, shape)
    rows = prompts(tasks)
    try:
        import verifiers as vf
    except ModuleNotFoundError:
        return KernelEnv(rows, rubric)
    from datasets import Dataset

    vf_rubric = vf.Rubric(funcs=rubric.funcs, weights=rubric.weights)
    return vf.SingleTurnEnv(dataset=Dataset.from_list(rows), rubric=vf_rubric)
