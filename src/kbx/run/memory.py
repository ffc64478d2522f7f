"""A run's GPU memory budgets in one process: measured at the run's start by the process that
starts it (``measure``), installed in every process that puts work on the GPUs (the parent, each
worker process, which gets its share), with the standing holds of that process's own contexts
and idle spares.  The budgets themselves are ``kbx.gpu.budget``; the figures behind them
``kbx.gpu.footprint``; the decisions docs/design/memory.md.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

import torch

from kbx.core import trace
from kbx.core.config import EvalConfig
from kbx.gpu import budget, footprint
from kbx.gpu.budget import Budget, Grant
from kbx.gpu.footprint import Card
from kbx.sandbox.servers import SPARES

LOG_NAME = "gpu-memory.log"  # in the run folder: the cards, every wait, a sample every 5 s

Cards = dict[int | None, Card]


def measure(cfg: EvalConfig, gpus: Sequence[int | None]) -> Cards:
    """Each GPU's card, measured in this process (none without CUDA: no budget then)."""
    cards: Cards = {}
    for gpu in gpus:
        card = footprint.measure(gpu, cfg.tuning.gpu_memory_gb)
        if card is not None:
            cards[gpu] = card
    trace.mark("set-up: GPU memory measured")
    return cards


def default_spares(cfg: EvalConfig, cards: Cards) -> int | None:
    """Idle spares per GPU: ``Tuning.spares``, else the device's default within what the
    smallest budget affords (``footprint.spares_room``); None where nothing was measured."""
    if cfg.tuning.spares is not None or not cards:
        return cfg.tuning.spares
    return min(SPARES["cuda"], *(footprint.spares_room(card) for card in cards.values()))


class Memory:
    """This process's budgets of a run's GPUs (a ``share`` of each card's: the workers of one
    GPU split it) and its standing holds, released by ``close``."""

    def __init__(self, cfg: EvalConfig, cards: Cards, share: int = 1) -> None:
        self.cards, self.gpus = cards, list(cards)
        self.log = cfg.run_dir / LOG_NAME if cfg.run_dir else None
        self.holds: list[Grant] = []
        for gpu, card in cards.items():
            made = budget.install(gpu, functools.partial(self.make, gpu, card, share))
            made.write("start", share=share, **card.record())

    def make(self, gpu: int | None, card: Card, share: int) -> Budget:
        """The budget of ``gpu``: this process's share of the card's, guarded by the card's
        free memory (where CUDA is there to read it)."""
        room = Budget(
            f"gpu{gpu or 0}",
            card.budget // max(1, share),
            context=card.context,
            headroom=card.headroom // max(1, share),
            log=self.log,
        )
        if torch.cuda.is_available():
            index = torch.cuda.current_device() if gpu is None else gpu
            room.free = lambda: int(torch.cuda.mem_get_info(index)[0])
            room.reclaim = torch.cuda.empty_cache
            room.cached = lambda: (
                torch.cuda.memory_reserved(index) - torch.cuda.memory_allocated(index)
            )
        return room

    def hold(self, contexts: int, what: str) -> None:
        """Standing holds of ``contexts`` CUDA contexts on each GPU, for the run's life."""
        for gpu, card in self.cards.items():
            if contexts > 0:
                self.holds.append(budget.on(gpu).hold(contexts * card.context, what))

    def close(self) -> None:
        for grant in self.holds:
            grant.release()
        self.holds = []
        for gpu in self.gpus:
            budget.uninstall(gpu)
        self.gpus = []


def log_path(run_dir: Path | None) -> Path | None:
    return run_dir / LOG_NAME if run_dir else None
