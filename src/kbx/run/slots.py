"""Job slots and their GPUs: each slot names one GPU, the GPUs in turn; a job (or a baseline
task) takes a slot, runs on its GPU and gives it back."""

from __future__ import annotations

import queue
from collections.abc import Sequence


def slot_gpus(gpus: Sequence[int | None], count: int) -> list[int | None]:
    """The GPU of each of ``count`` job slots: ``gpus`` in turn."""
    return [gpus[i % len(gpus)] for i in range(count)]


def gpu_slots(gpus: Sequence[int | None], count: int) -> queue.Queue[int | None]:
    """``count`` slots, each naming one of ``gpus`` in turn: a job takes one, runs on that GPU and
    gives it back."""
    slots: queue.Queue[int | None] = queue.Queue()
    for gpu in slot_gpus(gpus, count):
        slots.put(gpu)
    return slots
