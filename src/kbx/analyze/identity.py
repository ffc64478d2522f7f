"""Who and what each analysed run is: its label, method, model, device, GPU, dates, kbx version,
the inputs it was read from and how many of the suite's tasks it attempted.  The report's
subtitle and the command's "read" lines come from here, so a figure never stands without the
runs behind it."""

from __future__ import annotations

import pandas as pd
from pydantic import BaseModel


class RunIdentity(BaseModel):
    label: str  # what the tables and figures call the run: method · model, or --name
    method: str
    model: str
    inputs: list[str]
    device: str  # cuda, cpu (several: comma-separated)
    gpus: list[str]
    dates: list[str]  # the first and the last day its candidates were evaluated
    kbx: list[str]  # kbx versions that evaluated it
    attempted: int  # suite tasks it has a candidate for
    suite: int  # the suite's tasks
    timed: bool  # some candidate has a speedup (runs on the CPU have none)

    def line(self) -> str:
        """``geak · deepseek-chat: runs/geak, NVIDIA H200, 2026-12-04, kbx 0.1.0, 4 of 184``."""
        where = ", ".join(self.gpus) or self.device or "device unknown"
        parts = [", ".join(self.inputs), where, " to ".join(self.dates) or "undated"]
        parts += [f"kbx {', '.join(self.kbx)}"] if self.kbx else []
        parts += [f"{self.attempted} of {self.suite} tasks attempted"]
        return f"{self.label}: " + ", ".join(parts)


def identities(table: pd.DataFrame) -> list[RunIdentity]:
    """One identity per run label of a loaded table (``kbx.analyze.load``)."""
    suite = int(table["task_id"].nunique())
    out = []
    for lab, part in table.groupby("method", sort=True):
        rows = part[part["attempted"]] if "attempted" in part else part
        out.append(
            RunIdentity(
                label=str(lab),
                method=", ".join(values(rows, "method_name")) or str(lab),
                model=", ".join(values(rows, "model")),
                inputs=values(rows, "input"),
                device=", ".join(values(rows, "device")),
                gpus=[g for g in values(rows, "gpu") if g not in ("unknown", "cpu")],
                dates=span(values(rows, "date")),
                kbx=values(rows, "kbx"),
                attempted=int(rows["task_id"].nunique()),
                suite=suite,
                timed=bool(rows["perf_ok"].any()),
            )
        )
    return out


def values(frame: pd.DataFrame, column: str) -> list[str]:
    """The distinct non-empty values of a column, sorted (none where it is absent)."""
    if column not in frame:
        return []
    return sorted({str(v) for v in frame[column].dropna() if str(v)})


def span(days: list[str]) -> list[str]:
    return [days[0], days[-1]] if len(days) > 1 else days


def subtitle(runs: list[RunIdentity], over: str) -> str:
    """One line for the report: devices, dates, kbx versions and the coverage of every run."""
    gpus = sorted({g for r in runs for g in r.gpus}) or sorted({r.device for r in runs if r.device})
    days = span(sorted({d for r in runs for d in r.dates}))
    versions = sorted({v for r in runs for v in r.kbx})
    coverage = "; ".join(f"{r.label} {r.attempted} of {r.suite} tasks attempted" for r in runs)
    parts = [", ".join(gpus) or "device unknown", " to ".join(days) or "undated"]
    parts += [f"kbx {', '.join(versions)}"] if versions else []
    denominator = "the whole suite" if over == "suite" else "the tasks each run attempted"
    return " · ".join([*parts, coverage, f"rates over {denominator}"])
