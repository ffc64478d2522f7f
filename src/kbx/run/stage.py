"""The baselines stage: every baseline a run's tasks lack, measured before the candidates run.

A task per core (or ``Tuning.baseline_workers`` per GPU), spread over the GPUs: the stage has
the cores and the GPU lock to itself until its last task has begun; from then on (its tail, when
fewer tasks than workers are left) the candidates' jobs share them, those whose baselines are
done first (``Progress``, docs/design/throughput.md, Baselines).  Each task's wait
for room on the GPU, wall and worker CPU seconds, and its worker's peak of GPU memory beside the
budget's estimate go to ``logs/baselines-stage-*.log`` in the run folder, the stage's whole time
on its last line.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import IO

from kbx.core import incidents
from kbx.core.activity import BOARD
from kbx.core.config import EvalConfig
from kbx.evaluate.baselines import Baselines, open_baselines
from kbx.gpu import compile_pool, footprint
from kbx.gpu.placement import Placement
from kbx.run.slots import gpu_slots
from kbx.suite import find
from kbx.suite.task import Task

OnBaseline = Callable[[str, int], None]  # a task's baselines measured; how many tasks are left


class Progress:
    """Where a stage is, for the candidates waiting behind it: ``begun_all`` is set once every
    task of the stage has begun (or the stage has ended, measuring nothing or failing), and
    ``left`` holds the tasks whose measurement is not done; once ``cancelled`` is set (Ctrl-C),
    the stage begins no further task."""

    def __init__(self) -> None:
        self.begun_all = threading.Event()
        self.cancelled = threading.Event()
        self.left: set[str] = set()
        self.lock = threading.Lock()

    def done(self, task_id: str) -> None:
        with self.lock:
            self.left.discard(task_id)

    def waiting(self, task_id: str) -> bool:
        with self.lock:
            return task_id in self.left


def measure(
    cfg: EvalConfig,
    gpus: Sequence[int | None],
    place: Callable[[int | None], Placement],
    task_ids: list[str],
    on_baseline: OnBaseline | None = None,
    progress: Progress | None = None,
) -> None:
    """Measure the baselines these tasks lack (the cache's are kept) on ``gpus``, each GPU's
    work where ``place`` puts it.  ``on_baseline`` is told ``("", n)`` as the stage begins (n
    tasks to measure), then each task as it is done with how many are left; ``progress``, when
    every task has begun and which are done.  A task whose baselines fail here is told in one
    line (``incidents``) and left to its job, which measures them again and reports the
    error."""
    progress = progress or Progress()
    try:
        stage(cfg, gpus, place, task_ids, on_baseline, progress)
    finally:
        progress.begun_all.set()  # also where the stage ended early: nothing waits for it


def stage(
    cfg: EvalConfig,
    gpus: Sequence[int | None],
    place: Callable[[int | None], Placement],
    task_ids: list[str],
    on_baseline: OnBaseline | None,
    progress: Progress,
) -> None:
    """``measure``'s work: the tasks that lack baselines, measured by ``per_gpu`` threads a GPU."""
    store = open_baselines(cfg.baseline_cache)
    found = (find(i) for i in dict.fromkeys(task_ids))
    tasks = [t for t in found if t is not None and store.missing(t, cfg.kinds)]
    if not tasks:
        return
    if on_baseline:
        on_baseline("", len(tasks))
    progress.left = {t.id for t in tasks}
    begun = [0]
    per_gpu = cfg.tuning.baseline_workers or max(1, len(os.sched_getaffinity(0)) // len(gpus))
    slots = gpu_slots(gpus, per_gpu * len(gpus))
    log = incidents.stream("baselines-stage")
    began = time.monotonic()

    def one(task: Task) -> str:
        gpu = slots.get()
        if progress.cancelled.is_set():  # left to a later run
            slots.put(gpu)
            progress.done(task.id)
            return ""
        with progress.lock:
            begun[0] += 1
            if begun[0] == len(tasks):
                progress.begun_all.set()
        token = BOARD.begin(f"baselines of {task.id}", "measuring")
        start = time.monotonic()
        try:
            fetch(store, cfg, task, place(gpu))
        finally:
            BOARD.end(token)
            slots.put(gpu)
            progress.done(task.id)
        write(log, line(store, task, start - began))
        return task.id

    with ThreadPoolExecutor(per_gpu * len(gpus), thread_name_prefix="kbx-stage") as pool:
        futures = [pool.submit(one, t) for t in tasks]
        for left, fut in enumerate(as_completed(futures), start=1):
            if on_baseline and (measured := fut.result()):  # "": skipped, the run cancelled
                on_baseline(measured, len(futures) - left)
    compile_pool.POOL.close()  # the stage's idle workers: their contexts back to the card
    write(log, f"stage {time.monotonic() - began:.1f} s, {len(tasks)} tasks")
    if log is not None:
        log.close()


def fetch(store: Baselines, cfg: EvalConfig, task: Task, place: Placement) -> None:
    """One task's baselines where ``place`` puts them, waiting for room in its GPU's memory
    budget; a failure is one line on the terminal, its trace in the run folder."""
    try:
        store.fetch(task, cfg.kinds, place)
    except Exception as exc:  # noqa: BLE001 - the task's job measures them again
        incidents.report(
            f"baselines of {task.id} (measured again with its candidate)",
            exc,
            f"baselines-{task.id}",
        )


def line(store: Baselines, task: Task, start_s: float) -> str:
    """A task's line in the stage's log: its times, then (where its worker said) its peak of
    reserved GPU memory, what the worker kept after, and the budget's estimate, in MiB."""
    wall, cpu = store.spent.get(task.id, (0.0, 0.0))
    waited = store.waited.get(task.id, 0.0)
    times = f"waited_for_room {waited:.1f} measured {wall:.1f} cpu {cpu:.1f}"
    memory = store.gpu_bytes.get(task.id, {})
    if "peak_bytes" in memory:
        mib = {k: v >> 20 for k, v in memory.items()}
        estimate = footprint.baseline_bytes(task) >> 20
        times += f" peak_mib {mib['peak_bytes']} kept_mib {mib.get('kept_bytes', 0)}"
        times += f" estimate_mib {estimate}"
    return f"{task.id} start {start_s:.1f} {times}"


def write(log: IO[bytes] | None, text: str) -> None:
    if log is not None:
        log.write(text.encode() + b"\n")
        log.flush()
