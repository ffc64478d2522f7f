"""The HTTP routes of ``kbx serve`` (FastAPI); the OpenAPI page is at ``/docs``.

Every ``/v1`` route needs a bearer token when the service has tokens; ``/healthz``, ``/metrics``
and the docs do not.  Results stream as NDJSON (or server-sent events with
``Accept: text/event-stream``) in the order they finish.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from kbx.core.version import __version__
from kbx.serve.auth import Tokens
from kbx.serve.schemas import BatchAccepted, Evaluation, EvaluationBatch, TaskInfo
from kbx.serve.service import Refused, Service

log = logging.getLogger("kbx.serve")
STREAM_POLL_S = 0.2  # how often a stream looks for newly finished jobs of its batch


def create_app(service: Service, tokens: Tokens | None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if requeued := service.start():
            log.warning("kbx serve: %d jobs left running by the last server queued again", requeued)
        yield
        service.stop()

    app = FastAPI(
        title="kbx serve",
        version=__version__,
        description="Evaluation of Triton kernels for the KernelBench-X suite, as a service: "
        "batches in, verdicts and rewards out (docs/design/serve.md).",
        lifespan=lifespan,
    )

    def authorized(request: Request) -> None:
        if tokens is not None and not tokens.allows(request.headers.get("authorization")):
            service.metrics.rejected.labels("401").inc()
            raise HTTPException(
                401, "a bearer token is required", headers={"WWW-Authenticate": "Bearer"}
            )

    @app.exception_handler(Refused)
    def refused(request: Request, exc: Refused) -> JSONResponse:
        service.metrics.rejected.labels(str(exc.status)).inc()
        return JSONResponse({"detail": exc.message}, exc.status, headers=exc.headers)

    guarded = [Depends(authorized)]
    add_limits(app, service)
    add_job_routes(app, service, guarded)
    add_info_routes(app, service, guarded)
    return app


async def finished(service: Service, batch_id: str, total: int, sse: bool) -> AsyncIterator[str]:
    """The batch's finished jobs, each once, until all ``total`` have been sent."""
    sent: set[str] = set()
    while len(sent) < total:
        done = await asyncio.to_thread(service.queue.batch, batch_id, True)
        for job in done:
            if job["id"] not in sent:
                sent.add(job["id"])
                body = Evaluation.model_validate(job).model_dump_json()
                yield f"data: {body}\n\n" if sse else body + "\n"
        if len(sent) < total:
            await asyncio.sleep(STREAM_POLL_S)


def add_limits(app: FastAPI, service: Service) -> None:
    limits = service.limits
    max_body = limits.max_batch * (limits.max_code_bytes + limits.max_metadata_bytes) * 2

    @app.middleware("http")
    async def body_limit(request: Request, call_next: Any) -> Response:
        """A body too large for any admissible batch is refused before it is read."""
        size = request.headers.get("content-length")
        if size is not None and size.isdigit() and int(size) > max_body:
            service.metrics.rejected.labels("413").inc()
            return JSONResponse({"detail": f"{size} bytes of body; at most {max_body}"}, 413)
        response: Response = await call_next(request)
        return response


def add_job_routes(app: FastAPI, service: Service, guarded: list[Any]) -> None:
    @app.post("/v1/evaluations", dependencies=guarded, status_code=202)
    def submit(batch: EvaluationBatch) -> BatchAccepted:
        """Queue a batch of candidates; the ids come back once the batch is stored."""
        return service.submit(batch)

    @app.get("/v1/evaluations/{job_id}", dependencies=guarded)
    def evaluation(job_id: str) -> Evaluation:
        """One job: its state, and its result record once done."""
        found = service.queue.job(job_id)
        if found is None:
            raise HTTPException(404, f"no evaluation {job_id!r}")
        return Evaluation.model_validate(found)

    @app.get("/v1/batches/{batch_id}", dependencies=guarded)
    def batch(batch_id: str) -> list[Evaluation]:
        """Every job of a batch, in the order submitted."""
        jobs = service.queue.batch(batch_id)
        if not jobs:
            raise HTTPException(404, f"no batch {batch_id!r}")
        return [Evaluation.model_validate(job) for job in jobs]

    @app.get("/v1/batches/{batch_id}/stream", dependencies=guarded)
    def stream(batch_id: str, request: Request) -> StreamingResponse:
        """Each job of the batch once, as it finishes: NDJSON, or SSE if the client asks."""
        total = len(service.queue.batch(batch_id))
        if not total:
            raise HTTPException(404, f"no batch {batch_id!r}")
        sse = "text/event-stream" in request.headers.get("accept", "")
        lines = finished(service, batch_id, total, sse)
        return StreamingResponse(
            lines, media_type="text/event-stream" if sse else "application/x-ndjson"
        )


def add_info_routes(app: FastAPI, service: Service, guarded: list[Any]) -> None:
    @app.get("/v1/tasks", dependencies=guarded)
    def tasks() -> list[TaskInfo]:
        """The suite's tasks: what ``task_id`` may name."""
        from kbx.suite import select

        return [
            TaskInfo(
                id=t.id,
                category=t.category,
                entry=t.entry,
                signature=t.signature,
                version=t.version,
            )
            for t in select()
        ]

    @app.get("/healthz")
    def healthz() -> dict[str, Any]:
        """Liveness, with the queue's state (no token needed)."""
        return {
            "ok": True,
            "kbx": __version__,
            "device": service.device,
            "backend": service.backend,
            "queued": service.queue.count("queued"),
            "running": service.queue.count("running"),
        }

    @app.get("/metrics")
    def metrics() -> Response:
        """Prometheus text format (no token needed)."""
        return Response(service.metrics.text(), media_type="text/plain; version=0.0.4")
