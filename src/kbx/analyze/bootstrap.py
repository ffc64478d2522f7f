"""Bootstrap over tasks, resampled within category, vectorised as a weight matrix.

Resample b draws each category's tasks with replacement; ``weights[b, t]`` counts how often task t
was drawn. Every statistic here is a function of per-task sums, so all B resamples are one matrix
product (ratios) or one weighted cumulative sum (quantiles); the point estimate is the same
function with all weights 1.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from pydantic import BaseModel

LEVEL = 0.95


class Estimate(BaseModel):
    """A statistic with its percentile bootstrap interval; ``n`` is the tasks it is over."""

    value: float
    lo: float
    hi: float
    n: int
    num: float | None = None  # successes (or sum of values) behind a ratio
    den: float | None = None  # the ratio's denominator (rows, or tasks x methods)


class Resampler:
    """The B x T weight matrix of a stratified bootstrap over ``suite`` (task_id -> category)."""

    def __init__(self, suite: pd.Series, resamples: int = 10_000, seed: int = 0) -> None:
        suite = suite.sort_index()
        self.tasks = pd.Index(suite.index, name="task_id")
        self.resamples = resamples
        rng = np.random.default_rng(seed)
        weights = np.zeros((resamples, len(suite)), dtype=np.float64)
        for cols in pd.Series(np.arange(len(suite))).groupby(suite.to_numpy()).indices.values():
            k = len(cols)
            draws = rng.integers(0, k, size=(resamples, k)) + k * np.arange(resamples)[:, None]
            weights[:, cols] = np.bincount(draws.ravel(), minlength=resamples * k).reshape(-1, k)
        self.weights = weights

    def matrix(self, frame: pd.DataFrame, value: str, by: Sequence[str]) -> pd.DataFrame:
        """Per-task sums of ``value``: a T x G frame (groups as columns, absent tasks 0)."""
        keys = [*by, "task_id"]
        sums = frame.groupby(keys, sort=True, observed=True)[value].sum()
        table = sums.unstack(list(by)) if by else sums.to_frame("all")
        return table.reindex(self.tasks).fillna(0.0)

    def ratio(self, num: pd.DataFrame, den: pd.DataFrame) -> list[Estimate]:
        """sum(num) / sum(den) per column, for the data and for each resample."""
        n = num.to_numpy(dtype=float)
        d = den.to_numpy(dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            boot = (self.weights @ n) / (self.weights @ d)
            point = n.sum(0) / d.sum(0)
        counts = (d > 0).sum(0)
        lo, hi = bounds(boot)
        return [
            Estimate(
                value=float(point[g]),
                lo=float(lo[g]),
                hi=float(hi[g]),
                n=int(counts[g]),
                num=float(n[:, g].sum()),
                den=float(d[:, g].sum()),
            )
            for g in range(n.shape[1])
        ]

    def quantile(self, values: np.ndarray, task_index: np.ndarray, q: float) -> Estimate:
        """The weighted q-quantile of ``values`` (rows that belong to tasks ``task_index``)."""
        if len(values) == 0:
            return empty()
        order = np.argsort(values, kind="stable")
        v, t = values[order], task_index[order]
        point = float(np.quantile(v, q, method="inverted_cdf"))
        cum = np.cumsum(self.weights[:, t], axis=1)
        total = cum[:, -1:]
        idx = (cum < q * total).sum(axis=1).clip(max=len(v) - 1)
        boot = np.where(total[:, 0] > 0, v[idx], np.nan)
        return estimate(point, boot, len(np.unique(t)))

    def positions(self, task_ids: pd.Series) -> np.ndarray:
        """Column index in the weight matrix of each task id."""
        return np.asarray(self.tasks.get_indexer(task_ids))


def bounds(boot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column of (B, G) resampled values; NaN resamples (no rows) are
    left out, and nanquantile (slow) runs only where there are some."""
    alpha = (1 - LEVEL) / 2
    if boot.shape[0] == 0:
        nan = np.full(boot.shape[1:], np.nan)
        return nan, nan
    if not np.isnan(boot).any():
        lo, hi = np.quantile(boot, [alpha, 1 - alpha], axis=0)
        return lo, hi
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN: no resample had any rows
        lo, hi = np.nanquantile(boot, [alpha, 1 - alpha], axis=0)
    return lo, hi


def estimate(
    point: float, boot: np.ndarray, n: int, num: float | None = None, den: float | None = None
) -> Estimate:
    lo, hi = bounds(boot[:, None])
    return Estimate(value=float(point), lo=float(lo[0]), hi=float(hi[0]), n=n, num=num, den=den)


def empty() -> Estimate:
    return Estimate(value=float("nan"), lo=float("nan"), hi=float("nan"), n=0)
