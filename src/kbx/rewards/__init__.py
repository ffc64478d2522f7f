"""Rewards for RL trainers from kbx results: the shapes (``shapes``) and an adapter per trainer
(``verl``, ``openrlhf``, ``verifiers``), each a thin layer over ``kbx.client``
(docs/design/serve.md, Rewards)."""

from kbx.rewards.shapes import Shape, reward

__all__ = ["Shape", "reward"]
