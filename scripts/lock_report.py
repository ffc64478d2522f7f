"""What held the GPU lock during a run, from the hold log the lock writes next to itself.

Usage: python scripts/lock_report.py RUN_DIR/gpu0.lock.log [SECONDS]
Prints, per mode and purpose, how many holds, their total and longest hold and the total wait
before them; then the holds of the first SECONDS (default 60) of the run, in order, to show what
a slow start queued behind.  Purposes: timing (a candidate's exclusive turn), eager/compile
<task> (a baseline), peaks, check (the parent's reference outputs and comparison), inputs made,
inputs in, outputs out, timed outputs out, refill, launch, autotune.
"""

import json
import sys

import pandas as pd


def main(path: str, first_s: str = "60") -> int:
    with open(path) as f:
        holds = pd.DataFrame([json.loads(line) for line in f if line.strip()])
    if holds.empty:
        print("no holds logged")
        return 0
    baseline = holds["what"].str.match(r"(eager|compile) ")  # "eager <task id>": one row each
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
    print(table.sort_values("held_s", ascending=False).round(2).to_string())
    start = holds[holds["since_s"] <= float(first_s)].sort_values("since_s")
    print(f"\nholds that began in the first {first_s} s:")
    cols = ["since_s", "pid", "mode", "what", "waited_s", "held_s"]
    print(start[cols].round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
