"""A Ray cluster as an Evaluator ``Backend``: one actor per GPU (``num_gpus=1``), each holding
Evaluators of its own on that GPU; on the CPU, one single-slot actor per CPU the cluster offers
(or ``Tuning.jobs``).  Candidates go to the actor with the fewest in flight and come back in
completion order, as the local backend's do.  The read stage, which needs no child and no GPU,
runs first as a fractional-CPU Ray task (``screen``), so that unreadable, empty or unknown-task
submissions never take an actor's slot.  The sandbox runs inside each actor's node exactly as
under ``kbx eval``: Ray only carries candidates and results (docs/design/serve.md, Ray).

``RayPool`` owns the actors; a ``RayBackend`` is one (perf, tuning) profile over a pool, so that
``kbx serve``'s tiers share the cluster's GPUs instead of each claiming all of them.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import ray

from kbx.core.candidate import Candidate
from kbx.core.config import Tuning
from kbx.core.result import Result
from kbx.run.scheduler import OnBaseline, default_jobs
from kbx.suite.verdict import Verdict

SCREEN_CPUS = 0.1  # of a CPU: the read stage is a lookup, no child


def screen(candidate: Candidate, device: str) -> Result | None:
    """The read stage's verdict of a candidate that never reaches a sandbox; None when it goes
    on to an Evaluator actor."""
    from kbx.evaluate.outcome import unreadable

    if problem := unreadable(candidate):
        return Result.of(candidate, device, problem[0], problem[1], "read")
    return None


class EvaluatorActor:
    """The body of an actor: an Evaluator per profile, opened on first use and kept, all in one
    run folder so that they take the same GPU lock (timings never overlap)."""

    def __init__(self, device: str, jobs: int) -> None:
        self.device, self.jobs = device, jobs
        self.run_dir = Path(tempfile.mkdtemp(prefix="kbx-ray-"))
        self.open: dict[tuple[bool, str], Any] = {}

    def evaluate(self, candidate: Candidate, perf: bool, tuning: str) -> Result:
        from kbx.run.evaluator import Evaluator

        if (perf, tuning) not in self.open:
            knobs = Tuning.model_validate_json(tuning).model_copy(
                update={"jobs": self.jobs, "procs": 1}
            )
            ev = Evaluator(self.device, perf=perf, tuning=knobs, run_dir=self.run_dir)
            self.open[(perf, tuning)] = ev.start()
        return next(iter(self.open[(perf, tuning)].pairs([candidate])))[1]

    def close(self) -> None:
        for ev in self.open.values():
            ev.close()
        shutil.rmtree(self.run_dir, ignore_errors=True)


class RayPool:
    """The Evaluator actors on the Ray cluster at ``address`` (None: this process's Ray, or a
    local instance started for it)."""

    def __init__(
        self, device: str, tuning: Tuning, address: str | None = None, actors: int | None = None
    ) -> None:
        self.device = device
        self.started_ray = not ray.is_initialized()
        if self.started_ray:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        resources = ray.cluster_resources()
        if device == "cuda":
            count = actors or int(resources.get("GPU", 0))
            self.per_actor = tuning.jobs or default_jobs("cuda")
            options: dict[str, Any] = {"num_gpus": 1, "num_cpus": 1}
        else:
            count = actors or tuning.jobs or int(resources.get("CPU", 1))
            self.per_actor = 1
            options = {"num_cpus": 1 - 2 * SCREEN_CPUS}  # room for the screening tasks
        if count < 1:
            raise ValueError(f"the Ray cluster has no {device.upper()} for an Evaluator actor")
        remote: Any = ray.remote(EvaluatorActor).options(max_concurrency=self.per_actor, **options)
        self.actors: list[Any] = [remote.remote(device, self.per_actor) for _ in range(count)]
        self.screen: Any = ray.remote(screen).options(num_cpus=SCREEN_CPUS)
        self.in_flight = [0] * count
        self.lock = threading.Lock()  # ``kbx serve`` sends from several threads

    @property
    def slots(self) -> int:
        """Candidates the cluster evaluates at once."""
        return len(self.actors) * self.per_actor

    def send(self, cand: Candidate, perf: bool, tuning: str) -> tuple[Any, int]:
        with self.lock:
            actor = self.in_flight.index(min(self.in_flight))
            self.in_flight[actor] += 1
        return self.actors[actor].evaluate.remote(cand, perf, tuning), actor

    def done(self, actor: int) -> None:
        with self.lock:
            self.in_flight[actor] -= 1

    def close(self, cancel: bool = False) -> None:
        for actor in self.actors:
            if not cancel:
                with contextlib.suppress(ray.exceptions.RayError):
                    ray.get(actor.close.remote(), timeout=60)
            ray.kill(actor)
        self.actors = []
        if self.started_ray:
            ray.shutdown()


class RayBackend:
    """One (perf, tuning) profile over a ``RayPool``: its own when given none, closed with it."""

    def __init__(
        self,
        device: str,
        perf: bool,
        tuning: Tuning,
        address: str | None = None,
        pool: RayPool | None = None,
    ) -> None:
        self.owns_pool = pool is None
        self.pool = pool or RayPool(device, tuning, address)
        self.perf, self.tuning = perf, tuning.model_dump_json()

    def submit(
        self, candidates: Iterable[Candidate], on_baseline: OnBaseline | None = None
    ) -> Iterator[tuple[Candidate, Result]]:
        """Results as they finish; ``on_baseline`` is not called (each actor measures its own).
        Each candidate is screened first (``screen``), then sent to an actor."""
        pending: dict[Any, tuple[Candidate, int | None]] = {}  # actor None: being screened
        for cand in candidates:
            pending[self.pool.screen.remote(cand, self.pool.device)] = (cand, None)
            while len(pending) >= 2 * self.pool.slots:
                if (done := self.receive(pending)) is not None:
                    yield done
        while pending:
            if (done := self.receive(pending)) is not None:
                yield done

    def receive(
        self, pending: dict[Any, tuple[Candidate, int | None]]
    ) -> tuple[Candidate, Result] | None:
        """The next finished reference: a result, or None when a screened candidate went on to
        an actor."""
        [ref], _ = ray.wait(list(pending), num_returns=1)
        cand, actor = pending.pop(ref)
        if actor is not None:
            self.pool.done(actor)
        try:
            got = ray.get(ref)
        except ray.exceptions.RayError as exc:  # the actor or its node died: kbx's fault
            detail = f"ray backend: {type(exc).__name__}: {str(exc).splitlines()[0]}"
            return cand, Result.of(cand, self.pool.device, Verdict.HARNESS_ERROR, detail, "read")
        if actor is None and got is None:  # read: it goes on
            sent, to = self.pool.send(cand, self.perf, self.tuning)
            pending[sent] = (cand, to)
            return None
        return cand, got

    def close(self, cancel: bool = False) -> None:
        if self.owns_pool:
            self.pool.close(cancel)
