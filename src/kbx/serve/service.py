"""The service behind the HTTP routes: admission (limits, known tasks), the queue, the
dispatcher and the metrics, with no HTTP in it."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from kbx.core.version import __version__
from kbx.serve.dispatch import Dispatcher, Evaluators
from kbx.serve.metrics import Metrics
from kbx.serve.queue import NewJob, Queue, content_key
from kbx.serve.schemas import BatchAccepted, EvaluationBatch, EvaluationItem, ServeLimits
from kbx.suite import find


class Refused(Exception):
    """A request the service does not take: an HTTP status and a message that says why."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


@dataclass
class Service:
    queue: Queue
    evaluators: Evaluators
    dispatcher: Dispatcher
    metrics: Metrics
    limits: ServeLimits
    backend: str = "local"

    @property
    def device(self) -> str:
        return self.evaluators.device

    def start(self) -> int:
        """Requeue what a crash left running and start the threads; returns how many."""
        requeued = self.queue.recover()
        self.dispatcher.start()
        return requeued

    def stop(self) -> None:
        self.dispatcher.stop()

    def submit(self, batch: EvaluationBatch) -> BatchAccepted:
        """Admit a batch whole or not at all; stored before its ids are returned."""
        self.check_size(batch)
        if batch.batch_id and (known := self.queue.batch(batch.batch_id)):
            return BatchAccepted(
                batch_id=batch.batch_id,
                ids=[job["id"] for job in known],
                cached=[job["cached"] for job in known],
            )
        jobs = [self.new_job(i, item) for i, item in enumerate(batch.items)]
        if self.queue.count("queued") + len(jobs) > self.limits.max_queue:
            raise Refused(
                429,
                f"the queue is full ({self.limits.max_queue} jobs): retry later",
                {"Retry-After": str(self.limits.retry_after_s)},
            )
        batch_id = batch.batch_id or uuid.uuid4().hex
        accepted = self.queue.add(batch_id, jobs)
        for job, acc in zip(jobs, accepted, strict=True):
            if acc.cached:
                verdict = str((self.queue.job(acc.id) or {}).get("result", {}).get("verdict"))
                self.metrics.answered(verdict, job.tier, True, 0.0)
        self.dispatcher.wake()
        return BatchAccepted(
            batch_id=batch_id, ids=[a.id for a in accepted], cached=[a.cached for a in accepted]
        )

    def check_size(self, batch: EvaluationBatch) -> None:
        limits = self.limits
        if len(batch.items) > limits.max_batch:
            raise Refused(
                413, f"{len(batch.items)} items in the batch; at most {limits.max_batch} a request"
            )
        for i, item in enumerate(batch.items):
            size = len(item.code.encode())
            if size > limits.max_code_bytes:
                raise Refused(
                    413, f"items[{i}].code: {size} bytes; at most {limits.max_code_bytes}"
                )
            meta = len(json.dumps(item.metadata).encode())
            if meta > limits.max_metadata_bytes:
                raise Refused(
                    413, f"items[{i}].metadata: {meta} bytes; at most {limits.max_metadata_bytes}"
                )

    def new_job(self, index: int, item: EvaluationItem) -> NewJob:
        task = find(item.task_id)
        if task is None:
            raise Refused(
                422, f"items[{index}].task_id: no task {item.task_id!r} (GET /v1/tasks lists them)"
            )
        key = content_key(task.id, item.code, item.tier, task.version, __version__, self.device)
        return NewJob(task.id, item.code, item.tier, item.priority, item.metadata, key)
