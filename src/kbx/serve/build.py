"""Assembling a service from its options: the queue in the state folder, the Evaluators
(local, or over a Ray pool), the dispatcher's threads, the tokens and the app."""

from __future__ import annotations

import argparse
from pathlib import Path

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict

from kbx.core.config import ConfigError, Tuning, load_tuning
from kbx.gpu.hardware import default_device, device_problem
from kbx.run.evaluator import Evaluator
from kbx.run.scheduler import default_jobs
from kbx.serve.app import create_app
from kbx.serve.auth import Tokens
from kbx.serve.dispatch import Closable, Dispatcher, Evaluators, OpenEvaluator
from kbx.serve.metrics import Metrics
from kbx.serve.queue import Queue
from kbx.serve.schemas import ServeLimits
from kbx.serve.service import Service
from kbx.serve.tiers import Profile


class ServeOptions(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    port: int = 8000
    device: str = "cpu"
    state: Path = Path("serve-state")
    tokens: Path | None = None
    tuning: Tuning = Tuning()
    backend: str = "local"
    ray_address: str | None = None
    limits: ServeLimits = ServeLimits()

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ServeOptions:
        device = args.device or default_device()
        if problem := device_problem(device):
            raise ValueError(problem)
        try:
            tuning = load_tuning(Path(args.config) if args.config else None)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        if args.jobs:  # the Evaluators' slots, and as many dispatcher threads
            tuning = tuning.model_copy(update={"jobs": args.jobs})
        limits = ServeLimits(
            max_code_bytes=args.max_code_bytes, max_batch=args.max_batch, max_queue=args.max_queue
        )
        return cls(
            port=args.port,
            device=device,
            state=Path(args.state),
            tokens=Path(args.tokens) if args.tokens else None,
            tuning=tuning,
            backend=args.backend,
            ray_address=args.ray_address,
            limits=limits,
        )


def build_app(options: ServeOptions) -> tuple[FastAPI, int]:
    """The app of ``options`` and the port it is to listen on."""
    tokens = Tokens.read(options.tokens) if options.tokens else None
    queue = Queue(options.state / "queue.sqlite")
    opener, slots, pool = evaluator_opener(options)
    evaluators = Evaluators(options.device, options.tuning, opener, pool)
    metrics = Metrics(lambda: queue.count("queued"), lambda: queue.count("running"))
    dispatcher = Dispatcher(queue, evaluators, metrics, slots)
    service = Service(queue, evaluators, dispatcher, metrics, options.limits, options.backend)
    return create_app(service, tokens), options.port


def evaluator_opener(options: ServeOptions) -> tuple[OpenEvaluator, int, Closable | None]:
    """How to open a profile's Evaluator, how many jobs the backend runs at once, and the Ray
    pool to close last.  The Evaluators share one run folder, so that their timings take the
    same GPU lock."""
    run_dir = (options.state / "run").resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    device = options.device
    if options.backend == "ray":
        from kbx.run.backends import ray_pool
        from kbx.run.ray_backend import RayBackend, RayPool

        pool = ray_pool(options.ray_address, device, options.tuning)
        assert isinstance(pool, RayPool)

        def on_ray(p: Profile) -> Evaluator:
            backend = RayBackend(device, p.perf, p.tuning, pool=pool)
            return Evaluator(device, perf=p.perf, tuning=p.tuning, run_dir=run_dir, backend=backend)

        return on_ray, pool.slots, pool

    def local(p: Profile) -> Evaluator:
        return Evaluator(device, perf=p.perf, tuning=p.tuning, run_dir=run_dir)

    return local, options.tuning.jobs or default_jobs(device), None
