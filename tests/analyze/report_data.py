"""Synthetic analysis results for the report's tests and its screenshot in docs/: plausible
numbers from a seeded generator, shaped like the real suite (15 categories, 184 tasks)."""

from __future__ import annotations

import math
import random
from typing import Any

CATEGORIES = {
    "Activation": 18, "Convolution": 10, "Fusion": 16, "Index": 12, "LinearAlgebra": 14,
    "Loss": 12, "Math": 16, "MatrixMultiply": 12, "Normalization": 14, "Optimizer": 8,
    "Pooling": 10, "Quantization": 8, "Random": 6, "Reduce": 16, "SpatialOps": 12,
}  # fmt: skip
METHODS = {"one-shot": 0.45, "few-shot": 0.55, "refine-3": 0.7}  # method -> typical exe rate
ITERATIVE = "refine-3"
HARDWARE = {"H100": 1.0, "A100": 0.85, "L40S": 0.7}  # machine -> speedup scale


def synthetic_results(seed: int = 0) -> dict[str, Any]:
    """A plain dict in kbx.analyze.schema.AnalysisResults' shape, as a statistics step or a
    JSON file would hand it to the report."""
    rng = random.Random(seed)
    by_category = {
        c: {m: _cell(rng, n, p) for m, p in METHODS.items()} for c, n in CATEGORIES.items()
    }
    speedups = {c: _speedups(rng, max(2, n // 2)) for c, n in CATEGORIES.items()}
    speedups["Random"] = []  # a category with no correct candidate: the plot must cope
    return {
        "title": "kbx analysis: one-shot vs few-shot vs refine-3 (synthetic data)",
        "subtitle": "A100, H100, L40S · 2026-12-01 to 2026-12-04 · kbx 0.1.0 · one-shot 184 of "
        "184 tasks attempted; few-shot 184 of 184; refine-3 184 of 184 · rates over the tasks "
        "each run attempted",
        "runs": [
            f"{m}: runs/{m}, H100, 2026-12-04, kbx 0.1.0, 184 of 184 tasks attempted"
            for m in METHODS
        ],
        "methods": list(METHODS),
        "categories": list(CATEGORIES),
        "rates": {m: _rates(rng, p) for m, p in METHODS.items()},
        "by_category": by_category,
        "speedups": speedups,
        "fast_p": {m: _fast_p(p) for m, p in METHODS.items()},
        "slower_share": {m: _interval(0.6 - 0.3 * p, 120) for m, p in METHODS.items()},
        "rounds": {ITERATIVE: _rounds()},
        "rescue": {ITERATIVE: _rescue(rng)},
        "hardware": {
            hw: {m: round(scale * (0.8 + p), 3) for m, p in METHODS.items()}
            for hw, scale in HARDWARE.items()
        },
    }


def _cell(rng: random.Random, tasks: int, p: float) -> dict[str, Any]:
    exe = min(1.0, max(0.0, rng.gauss(p, 0.15)))
    correct = round(exe * tasks)
    return {
        "tasks": tasks,
        "call_rate": min(1.0, exe + 0.15),
        "exe_rate": correct / tasks,
        "fast_1_rate": round(correct * 0.4) / tasks,
        "geomean_speedup": round(math.exp(rng.gauss(0.0, 0.3)), 3) if correct else None,
    }


def _interval(value: float, n: int) -> dict[str, Any]:
    half = 1.96 * math.sqrt(value * (1 - value) / n)  # a normal interval is plenty for a picture
    return {"value": value, "lo": max(0.0, value - half), "hi": min(1.0, value + half), "n": n}


def _rates(rng: random.Random, p: float) -> dict[str, Any]:
    return {
        "call": _interval(min(0.98, p + 0.2), 184),
        "exe": _interval(p, 184),
        "fast_1": _interval(p * rng.uniform(0.3, 0.45), 184),
    }


def _speedups(rng: random.Random, n: int, mu: float = 0.0) -> list[float]:
    return [round(math.exp(rng.gauss(mu, 0.7)), 4) for _ in range(n)]


def _fast_p(p: float) -> dict[str, Any]:
    thresholds = [0.1 * 1.25**k for k in range(25)]
    share = [p / (1 + (t / 0.9) ** 2.5) for t in thresholds]
    return {
        "p": thresholds,
        "share": share,
        "lo": [max(0.0, v - 0.06) for v in share],
        "hi": [min(1.0, v + 0.06) for v in share],
    }


def _rounds() -> list[dict[str, Any]]:
    exe = [0.45, 0.6, 0.67, 0.7]
    return [
        {
            "round": k,
            "call_rate": min(1.0, e + 0.2),
            "exe_rate": e,
            "mean_speedup": 0.9 - 0.05 * k,
            "exe": _interval(e, 184),
        }
        for k, e in enumerate(exe)
    ]


def _rescue(rng: random.Random) -> dict[str, Any]:
    # Repaired kernels tend to be slower: the fix that makes them correct is often a safe one.
    return {"rescued": _speedups(rng, 30, mu=-0.2), "persistent": _speedups(rng, 60)}
