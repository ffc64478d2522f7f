"""Synthetic result tables with planted effects, to test that the statistics find them.

Round 0 is correct with logit p = base + category effect + method effect (no task effect, so the
planted deviance shares are computable); each later round keeps a correct kernel (or loses it
with ``regress``) and rescues a failing one with ``rescue``, at ``rescued_factor`` times the
speedup a kernel that was correct from round 0 has. GPUs change times, never correctness.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel

from kbx.analyze.load import KEYS, finish, suite_tasks


class Planted(BaseModel):
    categories: dict[str, int]  # tasks per category
    category_effect: list[float]  # logit, one per category
    methods: list[str]
    method_effect: list[float]
    base: float = -0.3
    rounds: int = 1
    samples: int = 1
    gpus: int = 1
    rescue: float = 0.3
    regress: float = 0.03
    log_speedup_mean: float = 0.4  # persistent kernels: log-normal speedups
    log_speedup_sd: float = 0.5
    rescued_factor: float = 0.7
    gpu_sd: float = 0.3  # log-sd of a kernel's speedup across GPUs
    seed: int = 0

    def cell_p(self) -> np.ndarray:
        """Round-0 success probability per (category, method)."""
        logit = self.base + np.add.outer(self.category_effect, self.method_effect)
        return np.asarray(1.0 / (1.0 + np.exp(-logit)))

    def shares(self) -> dict[str, float]:
        """Population marginal deviance shares of category and of method at round 0."""
        p = self.cell_p()
        w = np.array(list(self.categories.values()), float)[:, None] / sum(self.categories.values())
        w = np.broadcast_to(w / p.shape[1], p.shape)
        h = lambda q: -(q * np.log(q) + (1 - q) * np.log1p(-q))  # noqa: E731
        total = h((w * p).sum())
        p_cat = (w * p).sum(1) / w.sum(1)
        p_meth = (w * p).sum(0) / w.sum(0)
        return {
            "category": 1 - float((w.sum(1) * h(p_cat)).sum()) / total,
            "method": 1 - float((w.sum(0) * h(p_meth)).sum()) / total,
        }

    def persistent_mean(self) -> float:
        return float(np.exp(self.log_speedup_mean + self.log_speedup_sd**2 / 2))


def planted(scale: float = 1.0, **overrides: object) -> Planted:
    """The default plant: the real suite's categories (times ``scale``), five methods."""
    counts = suite_tasks().groupby(lambda t: t.split("/")[0]).size()
    cats = {c: max(1, round(int(k) * scale)) for c, k in counts.items()}
    fields: dict[str, object] = {
        "categories": cats,
        "category_effect": list(
            np.linspace(-1.6, 1.6, len(cats))[np.random.default_rng(1).permutation(len(cats))]
        ),
        "methods": ["autotriton", "geak", "kernelagent", "claude", "deepseek-coder"],
        "method_effect": [0.7, 0.35, 0.0, -0.35, -0.7],
    }
    return Planted.model_validate(fields | overrides)


def outcomes(
    plant: Planted, rng: np.random.Generator, cat_of_task: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Correctness and rescue flags, shape (tasks, methods, samples, rounds)."""
    shape = (len(cat_of_task), len(plant.methods), plant.samples)
    p0 = plant.cell_p()[cat_of_task][:, :, None]
    ok = np.empty((*shape, plant.rounds), bool)
    rescued = np.zeros_like(ok)
    ok[..., 0] = rng.random(shape) < p0
    for r in range(1, plant.rounds):
        stay = ok[..., r - 1] & (rng.random(shape) >= plant.regress)
        new = ~ok[..., r - 1] & (rng.random(shape) < plant.rescue)
        ok[..., r] = stay | new
        rescued[..., r] = new | (rescued[..., r - 1] & stay)
    return ok, rescued


def generate(plant: Planted) -> pd.DataFrame:
    """One row per (task, method, round, sample, gpu): the layout ``load.load`` returns."""
    rng = np.random.default_rng(plant.seed)
    ids = [f"{c}/t{i:03d}" for c, k in plant.categories.items() for i in range(k)]
    cat_of_task = np.repeat(np.arange(len(plant.categories)), list(plant.categories.values()))
    ok, rescued = outcomes(plant, rng, cat_of_task)
    base = rng.normal(plant.log_speedup_mean, plant.log_speedup_sd, ok.shape[:3])[..., None]
    log_s = np.where(rescued, base + np.log(plant.rescued_factor), base)
    shape = (*ok.shape, plant.gpus)
    log_s = log_s[..., None] + rng.normal(0, plant.gpu_sd, shape) * (plant.gpus > 1)
    eager = np.exp(rng.normal(-2, 1, (len(ids), 1, 1, 1, plant.gpus)))
    t, m, s, r, g = (a.ravel() for a in np.indices(shape))
    exe = np.broadcast_to(ok[..., None], shape).ravel()
    speed = np.exp(log_s).ravel()
    eager_ms = np.broadcast_to(eager, shape).ravel()
    frame = pd.DataFrame(
        {
            "task_id": np.asarray(ids)[t],
            "method": np.asarray(plant.methods)[m],
            "model": "synthetic",
            "round": r,
            "sample": s,
            "gpu": np.char.add("gpu", g.astype(str)),
            "verdict": np.where(exe, "passed", "mismatch"),
            "call_ok": exe | (rng.random(len(t)) < 0.5),
            "exe_ok": exe,
            "perf_ok": exe,
            "speedup": np.where(exe, speed, np.nan),
            "kernel_ms": np.where(exe, eager_ms / speed, np.nan),
            "eager_ms": np.where(exe, eager_ms, np.nan),
            "gbs": np.nan,
            "tflops": np.nan,
        }
    )
    suite = pd.Series(
        np.asarray(list(plant.categories))[cat_of_task], index=pd.Index(ids, name="task_id")
    )
    return finish(frame[[*KEYS, *frame.columns.drop(KEYS)]], suite, [])
