"""The service's Prometheus metrics: queue depth and jobs in flight (read from the queue at
each scrape), results by verdict, tier and source (fresh or cached), and latency histograms."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS_S = (0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800)


class Metrics:
    """One registry per service (tests run several in one process)."""

    def __init__(self, queued: Callable[[], int], running: Callable[[], int]) -> None:
        self.registry = CollectorRegistry()
        depth = Gauge("kbx_queue_depth", "jobs waiting to run", registry=self.registry)
        depth.set_function(lambda: float(queued()))
        flight = Gauge("kbx_in_flight", "jobs being evaluated", registry=self.registry)
        flight.set_function(lambda: float(running()))
        self.results = Counter(
            "kbx_results",
            "jobs answered, by verdict, tier and source (fresh or cached)",
            ("verdict", "tier", "source"),
            registry=self.registry,
        )
        self.latency = self.histogram("kbx_latency_seconds", "from acceptance to result", "source")
        self.evaluation = self.histogram(
            "kbx_evaluation_seconds", "the Evaluator's time per fresh job", "tier"
        )
        self.rejected = Counter(
            "kbx_rejected_requests",
            "requests refused, by HTTP status",
            ("status",),
            registry=self.registry,
        )

    def histogram(self, name: str, about: str, label: str) -> Histogram:
        return Histogram(
            name,
            f"{about}, by {label}",
            (label,),
            buckets=LATENCY_BUCKETS_S,
            registry=self.registry,
        )

    def answered(self, verdict: str, tier: str, cached: bool, latency_s: float) -> None:
        source = "cached" if cached else "fresh"
        self.results.labels(verdict, tier, source).inc()
        self.latency.labels(source).observe(latency_s)

    def text(self) -> bytes:
        return generate_latest(self.registry)
