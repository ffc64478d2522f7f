"""Iteration dynamics over a method's rounds (methods.md 1.5 and 7.4 item 6): per transition
r -> r+1, the rescued, persistent, regressed and never-correct tasks and their speedups at r+1."""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel

from kbx.analyze.bootstrap import Estimate, Resampler
from kbx.analyze.speedups import AGGREGATE_LABELS, aggregate_frame
from kbx.analyze.stats import Spec, Table, flags, group_rows, n_tasks, outcomes

GROUPS = ("rescued", "persistent", "regressed", "never")


class Transition(BaseModel):
    method: str
    start: int  # round r; the transition is r -> r + 1 (the next round present)
    end: int
    n: int  # suite tasks
    shares: dict[str, Estimate]  # group -> share of suite tasks (num = the count)
    speedups: Table  # per group (rescued, persistent), the aggregates at round ``end``


def transitions(table: pd.DataFrame, rs: Resampler, gpu: str | None = None) -> list[Transition]:
    """Every consecutive pair of rounds of every method with two or more rounds."""
    frame = outcomes(table, gpu, rounds="all")
    out = []
    for method, part in frame.groupby("method"):
        rounds = sorted(part["round"].unique())
        for start, end in zip(rounds, rounds[1:], strict=False):
            out.append(transition(rs, part, str(method), int(start), int(end), n_tasks(table)))
    return out


def transition(
    rs: Resampler, part: pd.DataFrame, method: str, start: int, end: int, n: int
) -> Transition:
    before = part[part["round"] == start].set_index("task_id")["exe_ok"]
    after = flags(part[part["round"] == end])
    was = before.reindex(after["task_id"]).fillna(False).to_numpy(bool)
    now = after["exe_ok"].to_numpy(bool)
    group = np.select([~was & now, was & now, was & ~now], list(GROUPS[:3]), GROUPS[3])
    after = after.assign(group=group, **{g: (group == g).astype(float) for g in GROUPS})
    specs: dict[str, Spec] = {g: (g, "counted", None) for g in GROUPS}
    shares = group_rows(rs, after, (), specs)[0].stats
    kept = after[after["group"].isin(["rescued", "persistent"])]
    speedups = aggregate_frame(kept, rs, ("group",), n, "transition_speedups")
    speedups.labels = {k: f"{v}, at round {end}" for k, v in AGGREGATE_LABELS.items()}
    return Transition(method=method, start=start, end=end, n=n, shares=shares, speedups=speedups)
