"""The HTTP API's request and response bodies, and the service's limits."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kbx.serve.tiers import Tier


class ServeLimits(BaseModel):
    """What one request may hold and how many jobs may wait; past them the service answers
    413 (too large), 422 (malformed) or 429 (queue full, with ``Retry-After``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_code_bytes: int = Field(64 * 1024, gt=0, description="one candidate's code, UTF-8")
    max_batch: int = Field(256, gt=0, description="candidates in one POST")
    max_metadata_bytes: int = Field(4096, gt=0, description="one candidate's metadata, as JSON")
    max_queue: int = Field(10_000, gt=0, description="jobs queued at once")
    retry_after_s: int = Field(10, gt=0, description="the Retry-After of a 429")


class EvaluationItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(description="a suite task id, e.g. Activation/relu (GET /v1/tasks)")
    code: str = Field(description="the candidate: Python with Triton kernels, or a model's answer")
    tier: Tier = Field("quick", description="quick | standard | thorough")
    priority: int = Field(0, ge=-1000, le=1000, description="higher runs first")
    metadata: dict[str, Any] = Field(default_factory=dict, description="kept with the result")


class EvaluationBatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    items: list[EvaluationItem] = Field(min_length=1)
    batch_id: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9_-]{8,64}$",
        description="chosen by the client to make a retried POST idempotent: a batch id seen "
        "before returns that batch's ids instead of queueing it again",
    )


class BatchAccepted(BaseModel):
    batch_id: str
    ids: list[str]
    cached: list[bool] = Field(description="per id: answered at once from the cache")


class Evaluation(BaseModel):
    """A job: its state and, once done, its result record (``kbx.core.result.Result.record``)."""

    id: str
    batch_id: str
    task_id: str
    tier: str
    priority: int
    metadata: dict[str, Any]
    state: str = Field(description="queued | running | done")
    attempts: int = Field(description="evaluations started (more than 1 after a restart)")
    created_at: float
    finished_at: float | None = None
    latency_s: float | None = None
    cached: bool = Field(description="the result was reused from an earlier job")
    cached_from: str | None = Field(None, description="the job whose evaluation it reused")
    result: dict[str, Any] | None = None


class TaskInfo(BaseModel):
    id: str
    category: str
    entry: str
    signature: str
    version: int
