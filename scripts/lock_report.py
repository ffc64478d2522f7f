"""What held the GPU lock during a run, from the hold log the lock writes next to itself.

Usage: python scripts/lock_report.py RUN_DIR/gpu0.lock.log [SECONDS]
Prints the share of the run in which the GPU was held exclusively, only shared, or by nothing
logged, and in which a timing waited for shared holders to finish while newcomers queued behind
it (the lock prefers writers); per mode and purpose, how many holds, their total and longest
hold and the total wait before them; which shared holds the timings waited on (by purpose, then
the 12 longest by what they were, task included); then the holds
of the first SECONDS (default 60) of the run, in order, to show what a slow start queued
behind.  Shared holds under 50 ms are not logged, so the shared share is a lower bound.
Purposes: timing (a candidate's exclusive turn), eager/compile <task> (a baseline's timed
calls; shared: its warm-up), peaks, check <task> (the parent's reference outputs and
comparisons; "check" in logs before 2026-11-30f), check inputs, inputs made, inputs in,
outputs out, timed outputs out, refill, launch, autotune.
"""

import json
import sys

import pandas as pd


def shares(holds: pd.DataFrame) -> dict[str, float]:
    """Shares of the span from the first request to the last release: exclusive held, shared
    held only, neither, and a timing waiting on shared holders (a sweep over the holds)."""
    began = holds["t"] - holds["held_s"]
    events = []  # (time, exclusive held, shared held, timings waiting) deltas
    for (_, row), start in zip(holds.iterrows(), began, strict=True):
        ex = row["mode"] == "ex"
        events += [(start, int(ex), int(not ex), 0), (row["t"], -int(ex), -int(not ex), 0)]
        if ex and row["waited_s"] > 0:
            events += [(start - row["waited_s"], 0, 0, 1), (start, 0, 0, -1)]
    events.sort()
    spent = {"exclusive": 0.0, "shared only": 0.0, "nothing": 0.0, "timing draining": 0.0}
    ex = sh = waiting = 0
    for (t0, dex, dsh, dwait), (t1, *_) in zip(events, events[1:], strict=False):
        ex, sh, waiting = ex + dex, sh + dsh, waiting + dwait
        span = t1 - t0
        key = "exclusive" if ex else "shared only" if sh else "nothing"
        spent[key] += span
        if not ex and sh and waiting:
            spent["timing draining"] += span
    total = events[-1][0] - events[0][0]
    return {k: round(v / total, 3) for k, v in spent.items()} if total > 0 else spent


def drained_behind(holds: pd.DataFrame, key: str = "purpose") -> pd.Series:
    """Seconds that timings waited, by the ``key`` column (purpose, or ``what``: the task too)
    of the shared hold they waited on: for each exclusive wait, the shared hold overlapping it
    that ended last (the one it drained)."""
    began, ended = holds["t"] - holds["held_s"], holds["t"]
    sh = holds[holds["mode"] == "sh"].assign(began=began, ended=ended)
    blame: dict[str, float] = {}
    for _, ex in holds[(holds["mode"] == "ex") & (holds["waited_s"] > 0.01)].iterrows():
        asked, got = ex["t"] - ex["held_s"] - ex["waited_s"], ex["t"] - ex["held_s"]
        over = sh[(sh["began"] < got) & (sh["ended"] > asked)]
        if over.empty:
            continue  # behind another timing, or holds too short to be logged
        last = over.sort_values("ended").iloc[-1]
        share = min(got, last["ended"]) - max(asked, last["began"])
        blame[last[key]] = blame.get(last[key], 0.0) + share
    return pd.Series(blame, dtype=float).sort_values(ascending=False)


def main(path: str, first_s: str = "60") -> int:
    with open(path) as f:
        holds = pd.DataFrame([json.loads(line) for line in f if line.strip()])
    if holds.empty:
        print("no holds logged")
        return 0
    # "eager <task id>", "check <task id>": one row per purpose
    baseline = holds["what"].str.match(r"(eager|compile) |check \S+/")
    holds["purpose"] = holds["what"].where(~baseline, holds["what"].str.split(" ").str[0])
    began = holds["t"] - holds["held_s"]  # each line is written when its hold ends
    holds["since_s"] = began - (began - holds["waited_s"]).min()
    table = holds.groupby(["mode", "purpose"]).agg(
        holds=("held_s", "size"),
        held_s=("held_s", "sum"),
        longest_s=("held_s", "max"),
        waited_s=("waited_s", "sum"),
    )
    span = holds["t"].max() - holds["t"].min()
    print(f"{len(holds)} logged holds over {span:.1f} s")
    print("share of the run:", ", ".join(f"{k} {v:.1%}" for k, v in shares(holds).items()))
    print(table.sort_values("held_s", ascending=False).round(2).to_string())
    drained = drained_behind(holds)
    if not drained.empty:
        print("timings waited on shared holds of (s):", drained.round(1).to_dict())
        by_what = drained_behind(holds, "what").head(12)
        print("... the 12 holds they waited on longest (s):", by_what.round(1).to_dict())
    start = holds[holds["since_s"] <= float(first_s)].sort_values("since_s")
    print(f"\nholds that began in the first {first_s} s:")
    cols = ["since_s", "pid", "mode", "what", "waited_s", "held_s"]
    print(start[cols].round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
