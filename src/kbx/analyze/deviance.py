"""Explained deviance of the final Bernoulli outcomes by category and by method (methods.md 1.4
and 7.4 item 5): marginal shares in closed form, partial shares from a binomial GLM, LR tests."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from pydantic import BaseModel
from scipy import stats as sps

from kbx.analyze.bootstrap import Estimate, Resampler, estimate
from kbx.analyze.stats import outcomes


class Share(BaseModel):
    factor: str
    kind: str  # marginal: (D_null - D_X) / D_null; partial: (D_other - D_both) / D_null
    share: Estimate  # marginal shares carry a bootstrap interval; partial ones do not
    adjusted: float  # df-adjusted: (deviance drop - 2 df) / D_null
    lr_stat: float
    df: int
    p_value: float


class Deviance(BaseModel):
    n: int  # outcomes (tasks x methods)
    n_tasks: int
    response: str
    d_null: float
    d_category: float
    d_method: float
    d_both: float
    separation: bool  # a cell (e.g. all-fail Quantization) drove a coefficient to infinity
    shares: list[Share]


def bernoulli_deviance(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """-2 log-likelihood of cells with k successes in n at their own proportion (0 log 0 = 0);
    sums over the last axis."""
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        ll = np.where(k > 0, k * np.log(p), 0.0) + np.where(n - k > 0, (n - k) * np.log1p(-p), 0.0)
    return -2.0 * np.nansum(ll, axis=-1)


def factor_deviance(
    rs: Resampler, frame: pd.DataFrame, factor: str | None, y: str
) -> tuple[float, np.ndarray]:
    """D of the model with ``factor`` alone (None: the null), for the data and each resample."""
    frame = frame.assign(y=frame[y].astype(float), one=1.0)
    by = [factor] if factor else []
    k, n = rs.matrix(frame, "y", by).to_numpy(), rs.matrix(frame, "one", by).to_numpy()
    return float(bernoulli_deviance(k.sum(0), n.sum(0))), bernoulli_deviance(
        rs.weights @ k, rs.weights @ n
    )


def glm_deviance(frame: pd.DataFrame, y: str, factors: list[str]) -> tuple[float, bool]:
    """Residual deviance of a logit binomial GLM with the factors as dummies, and whether it
    warned of (quasi-)separation."""
    import statsmodels.api as sm

    design = pd.get_dummies(frame[factors].astype(str), drop_first=True, dtype=float)
    design = sm.add_constant(design, has_constant="add")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = sm.GLM(frame[y].astype(float).to_numpy(), design, family=sm.families.Binomial()).fit()
    # statsmodels warns only of perfect separation; a level with all-equal outcomes (an all-fail
    # Quantization) shows as a coefficient running off towards infinity instead
    separated = any("separation" in str(w.message).lower() for w in caught)
    separated |= bool(np.abs(np.asarray(fit.params)).max(initial=0.0) > 10)
    return float(fit.deviance), separated


def deviance(
    table: pd.DataFrame, rs: Resampler, response: str = "exe_ok", gpu: str | None = None
) -> Deviance:
    """D_null, D_category, D_method, D_both and the marginal and partial shares with LR tests."""
    frame = outcomes(table, gpu)
    levels = {f: int(frame[f].nunique()) for f in ("category", "method")}
    tasks = int(frame["task_id"].nunique())
    d0, b0 = factor_deviance(rs, frame, None, response)
    dx = {f: factor_deviance(rs, frame, f, response) for f in levels}
    both, separated = glm_deviance(frame, response, list(levels)) if len(frame) else (0.0, False)
    shares = []
    for f, other in (("category", "method"), ("method", "category")):
        df = levels[f] - 1
        drop = d0 - dx[f][0]
        with np.errstate(invalid="ignore", divide="ignore"):
            boot = (b0 - dx[f][1]) / b0
        shares.append(share(f, "marginal", estimate(ratio(drop, d0), boot, tasks), drop, df, d0))
        drop = dx[other][0] - both
        point = Estimate(value=ratio(drop, d0), lo=np.nan, hi=np.nan, n=tasks)
        shares.append(share(f, "partial", point, drop, df, d0))
    return Deviance(
        n=len(frame),
        n_tasks=tasks,
        response=response,
        d_null=d0,
        d_category=dx["category"][0],
        d_method=dx["method"][0],
        d_both=both,
        separation=separated,
        shares=shares,
    )


def share(factor: str, kind: str, est: Estimate, drop: float, df: int, d0: float) -> Share:
    p = float(sps.chi2.sf(max(drop, 0.0), df)) if df > 0 else float("nan")
    return Share(
        factor=factor,
        kind=kind,
        share=est,
        adjusted=ratio(drop - 2 * df, d0),
        lr_stat=drop,
        df=df,
        p_value=p,
    )


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")
