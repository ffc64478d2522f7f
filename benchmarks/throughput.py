"""Evaluations per second of candidates kbx has never seen, through the real engine.

A benchmark, not a test: it prints figures and writes them to a JSON file (``--out``).
    PYTHONPATH=src python benchmarks/throughput.py fresh cached --out FILE
    PYTHONPATH=src python benchmarks/throughput.py fresh --tasks 'Activation/*,Math/*' --jobs 2
    python benchmarks/gpu.py throughput   # on a GPU: throughput-<gpu>.json

Each named set runs through ``kbx.run.evaluator.Evaluator`` and ``kbx.run.plan.run_eval``, as
``kbx eval`` runs a JSONL source, on this machine's device (cuda when a GPU is visible), in the
``--tier`` of ``kbx serve`` (quick: correctness only, as ``kbx eval --no-perf``; standard: timed
against the baselines of the cache ``kbx eval`` uses).  Sets:

- ``fresh``: the 184 reference solutions, each made distinct (``variants.py``: a comment as
  the first line of every jitted function's body, which changes Triton's cache key, checked in
  a subprocess before the runs), so that every kernel compiles;
- ``rl``: 16 distinct variants of each of 24 tasks covering every category, a GRPO group's
  worth each, one group after another;
- ``cached``: ``fresh``'s candidates again, with every kernel in the Triton cache: the runs of
  one invocation share a Triton cache (``Tuning.triton_cache``), which ``fresh`` fills (run
  first if it was not asked for; then only the candidates it finished are measured).

``--via serve`` posts ``fresh`` or ``rl`` to a ``kbx serve`` on loopback instead (``served.py``),
for the service's rate against the engine's on the same set.  ``--tasks GLOB`` and ``--limit N``
make a set smaller; ``--end-s S`` ends the invocation S s
after its start, each set getting its share of what is left (``SHARES``), a set cut off
reporting over the candidates it finished (``cut``). Figures per set: evaluations per second and
per device-hour (over the whole run, start-up included, and ``steady`` from the first child's
start to the last result), the CPU seconds of the run's processes per candidate, the share of
the run's cores busy (``/proc/stat``, by kind, every process's), the GPU's utilisation and
memory (``nvidia-smi`` every 0.5 s), the median and p90 of each stage per candidate (``STAGES``,
from the records' ``stage_s``), the verdicts (every candidate is a reference solution: any other
verdict is a false rejection), and each candidate's verdict, so that ``--compare FILE`` can
check them against another run's (a ``jobs = 1`` run of the same set), by task and variant;
``--given RUN --compare BASE`` compares two runs' files without running anything (exit 1 where a
verdict differs).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import evidence  # noqa: E402
from variants import candidate_set, keys  # noqa: E402

CORES = sorted(os.sched_getaffinity(0))  # the run's cores, before kbx keeps one for timings
TARGETS = {"fresh": 2.0, "rl": 4.0, "cached": 5.0}  # evaluations/s on one H100, quick tier
VIA = {"engine": "the engine", "serve": "kbx serve"}  # how a set is evaluated (``--via``)
# The rows of the stage table: a name and how to read it from a record's stage_s (a key, or
# a function of the record); docs/design/throughput.md says what each is.
STAGES: list[tuple[str, Any]] = [
    ("read (parent)", "start"),
    ("spawn (request, fork)", "spawn"),
    ("child start (setup less parts)", lambda s: max(0.0, s.get("setup", 0.0) - setup_parts(s))),
    ("child confinement", "setup_confine"),
    ("child imports", "setup_imports"),
    ("CUDA context", "setup_context"),
    ("profiler's first session", "setup_profiler"),
    ("inputs", "setup_inputs"),
    ("launch hooks", "setup_hooks"),
    ("candidate import", "import"),
    ("cases (all)", "run"),
    ("first case", "run_first"),
    ("compile", "run_compile"),
    ("op evidence", "run_evidence"),
    ("GPU lock waits", "lock"),
    ("timing", "timing"),
    ("teardown (kill)", "kill"),
    ("outputs loaded", "load"),
    ("check", "check"),
    ("reference outputs", "check_reference"),
    ("check: lock waits", "check_wait"),
    ("baselines", "baselines"),
    ("compile stage ahead (kbx.run.ahead)", "ahead"),
    ("job's wait for its compile stage", "ahead_wait"),
    ("job (total)", "duration_s"),
    ("child CPU", "child_cpu"),
]


def setup_parts(stage_s: dict[str, float]) -> float:
    return sum(v for k, v in stage_s.items() if k.startswith("setup_"))


KINDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def jiffies() -> list[int]:
    """Jiffies of CORES by kind (``KINDS``), summed; zeros where there is no /proc/stat."""
    total = [0] * len(KINDS)
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return total
    wanted = {f"cpu{c}" for c in CORES}
    for line in lines:
        name, *fields = line.split()
        if name in wanted:
            total = [a + int(b) for a, b in zip(total, fields[: len(KINDS)], strict=False)]
    return total


def cpu_shares(before: list[int], after: list[int]) -> dict[str, float]:
    """The run's cores over the interval: the share of their time in each kind, and busy (not
    idle, not waiting for I/O)."""
    spent = [b - a for a, b in zip(before, after, strict=True)]
    total = sum(spent) or 1
    shares = {kind: round(n / total, 3) for kind, n in zip(KINDS, spent, strict=True)}
    shares["busy"] = round(1 - shares["idle"] - shares["iowait"], 3)
    shares["cores"] = len(CORES)
    return shares


class GpuSampler:
    """``nvidia-smi``'s utilisation and used memory of the run's GPU every 0.5 s."""

    def __init__(self, device: str) -> None:
        self.samples: list[tuple[int, int]] = []
        self.proc: subprocess.Popen[str] | None = None
        if device != "cuda" or shutil.which("nvidia-smi") is None:
            return
        index = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0]
        query = "--query-gpu=utilization.gpu,memory.used"
        cmd = ["nvidia-smi", query, "--format=csv,noheader,nounits", "-lms", "500", "-i", index]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self.read, daemon=True).start()

    def read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 2 and all(p.isdigit() for p in parts):
                self.samples.append((int(parts[0]), int(parts[1])))

    def stop(self) -> dict[str, Any] | None:
        if self.proc is None:
            return None
        self.proc.terminate()
        self.proc.wait()
        util = [u for u, _ in self.samples]
        if not util:
            return {"samples": 0}
        return {
            "samples": len(util),
            "utilisation_mean": round(statistics.mean(util) / 100, 3),
            "busy_share": round(sum(1 for u in util if u > 0) / len(util), 3),
            "memory_used_max_mib": max(m for _, m in self.samples),
        }


class Cut(Exception):
    """A set's share of ``--end-s`` is over."""


def stage_value(record: dict[str, Any], how: Any) -> float:
    stage_s = record.get("stage_s") or {}
    if callable(how):
        return float(how(stage_s))
    if how == "duration_s":
        return float(record.get("duration_s") or 0.0)
    return float(stage_s.get(how, 0.0))  # absent: none spent (no lock wait, nothing timed)


def stage_table(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """The median, p90 and mean per candidate of each stage (``STAGES``) any record has."""
    table = {}
    for label, how in STAGES:
        values = sorted(stage_value(r, how) for r in records)
        if not any(values):
            continue
        p90 = statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]
        table[label] = {
            "median_s": round(statistics.median(values), 3),
            "p90_s": round(p90, 3),
            "mean_s": round(statistics.mean(values), 3),
        }
    return table


def measure(
    name: str, rows: list[dict[str, Any]], args: argparse.Namespace, work: Path, end: float | None
) -> dict[str, Any]:
    """One set through an Evaluator of its own, as ``kbx eval SET.jsonl`` runs it; its figures."""
    from kbx.core.config import load_tuning
    from kbx.run.evaluator import DEFAULT, Evaluator
    from kbx.run.plan import run_eval
    from kbx.serve import tiers

    if args.via == "serve":
        return measure_served(name, rows, args, work, end)
    source, run_dir = work / f"{name}.jsonl", work / name
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    shutil.rmtree(run_dir, ignore_errors=True)
    tuning = load_tuning(args.config, jobs=args.jobs, triton_cache=work / "triton-cache")
    profile = tiers.profile(args.tier, args.device, tuning)
    last = {"at": time.monotonic(), "n": 0}

    def on_result(result: Any) -> None:
        last["at"], last["n"] = time.monotonic(), last["n"] + 1
        if last["n"] % 20 == 0:
            print(f"  {name}: {last['n']} of {len(rows)}, {last['at'] - began:.0f} s", flush=True)
        if end is not None and last["at"] > end:
            raise Cut

    began, began_epoch, cpu_before, own_before = time.monotonic(), time.time(), jiffies(), own_s()
    gpu, cut = GpuSampler(args.device), False
    baselines = args.baselines or DEFAULT
    try:
        with Evaluator(
            args.device, perf=profile.perf, run_dir=run_dir, baselines=baselines,
            tuning=profile.tuning,
        ) as ev:  # fmt: skip
            run_eval(source, run_dir, ev, on_result=on_result)
    except Cut:
        cut = True
    closed = time.monotonic()
    cpu, gpu_figures = cpu_shares(cpu_before, jiffies()), gpu.stop()
    cpu["parent_s"] = round(own_s() - own_before, 1)
    records = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    return figures(name, records, began, began_epoch, last["at"], closed, cut, cpu, gpu_figures)


def measure_served(
    name: str, rows: list[dict[str, Any]], args: argparse.Namespace, work: Path, end: float | None
) -> dict[str, Any]:
    """One set through a fresh ``kbx serve`` on loopback (``served.py``); its figures."""
    from served import run_served

    cpu_before, gpu = jiffies(), GpuSampler(args.device)
    records, times, cut = run_served(rows, args, work, name, end)
    cpu, gpu_figures = cpu_shares(cpu_before, jiffies()), gpu.stop()
    cpu["parent_s"] = round(times["parent_s"], 1)
    began, last = times["began"], times["last"]
    return figures(
        name, records, began, times["began_epoch"], last, times["closed"], cut, cpu, gpu_figures
    )


def own_s() -> float:
    """CPU seconds of this process so far: the parent's job threads, checks and references."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def figures(
    name: str,
    records: list[dict[str, Any]],
    began: float,
    began_epoch: float,
    last_at: float,
    closed: float,
    cut: bool,
    cpu: dict[str, float],
    gpu: dict[str, Any] | None,
) -> dict[str, Any]:
    wall = last_at - began
    evaluated = [r for r in records if "answered_from" not in (r.get("meta") or {})]
    spans = [(r["started_at"], r["started_at"] + r["duration_s"]) for r in evaluated]
    first_start = min(s for s, _ in spans) - began_epoch if spans else None
    # steady: from the first child's start (the fork server up) to the last result
    ran = [r["started_at"] + stage_value(r, "start") + stage_value(r, "spawn") for r in evaluated]
    steady = max(e for _, e in spans) - min(ran) if spans else 0.0
    rate = len(records) / wall if wall > 0 else 0.0
    child_s = sum(stage_value(r, "child_cpu") for r in evaluated)
    cpu["children_s"] = round(child_s, 1)
    rows = [
        {"task": r["task_id"], "sample": r.get("sample"), "verdict": r["verdict"]}
        | ({"detail": r["detail"][:200]} if r["verdict"] != "passed" else {})
        for r in records
    ]
    return {
        "candidates": len(records),
        "evaluated": len(evaluated),
        "cut": cut,
        "wall_s": round(wall, 1),
        "first_job_s": round(first_start, 2) if first_start is not None else None,
        "close_s": round(closed - last_at, 1),
        "evals_per_s": round(rate, 3),
        "per_device_hour": round(rate * 3600),
        "evals_per_s_steady": round(len(records) / steady, 3) if steady > 0 else None,
        "cpu": cpu,
        "cpu_s_per_candidate": round((child_s + cpu["parent_s"]) / max(1, len(evaluated)), 2),
        "gpu": gpu,
        "verdicts": dict(Counter(r["verdict"] for r in records)),
        "false_rejections": [row for row in rows if row["verdict"] != "passed"],
        "stages": stage_table(evaluated),
        "rows": rows,
    }


def compare(sets: dict[str, dict[str, Any]], other: dict[str, Any]) -> dict[str, Any]:
    """Each set's verdicts against another run's of the same set, by task and variant."""
    out = {}
    for name, got in sets.items():
        theirs = (other.get("sets") or {}).get(name)
        if not theirs:
            continue
        mine = {(r["task"], r["sample"]): r["verdict"] for r in got["rows"]}
        base = {(r["task"], r["sample"]): r["verdict"] for r in theirs["rows"]}
        both = sorted(set(mine) & set(base))
        differ = [
            {"task": t, "sample": s, "here": mine[(t, s)], "there": base[(t, s)]}
            for t, s in both
            if mine[(t, s)] != base[(t, s)]
        ]
        out[name] = {"compared": len(both), "same": len(both) - len(differ), "differ": differ}
    return out


def print_set(name: str, got: dict[str, Any]) -> None:
    cpu, gpu = got["cpu"], got["gpu"] or {}
    print(
        f"{name}: {got['candidates']} candidates in {got['wall_s']} s"
        + (" (cut off)" if got["cut"] else "")
        + f": {got['evals_per_s']}/s ({got['per_device_hour']}/device-hour), steady "
        f"{got['evals_per_s_steady']}/s, first job at {got['first_job_s']} s; verdicts "
        f"{got['verdicts']}; {len(got['false_rejections'])} false rejections",
        flush=True,
    )
    kinds = ", ".join(f"{k} {cpu[k]:.0%}" for k in KINDS if cpu[k] >= 0.005)
    print(
        f"{name}: CPU ({cpu['cores']} cores, every process) busy {cpu['busy']:.0%}: {kinds}; "
        f"this run's CPU per candidate {got['cpu_s_per_candidate']} s"
        + (f"; GPU utilisation {gpu['utilisation_mean']:.0%}" if "utilisation_mean" in gpu else ""),
        flush=True,
    )
    print(f"  {'stage, per candidate (s)':34} {'median':>8} {'p90':>8} {'mean':>8}")
    for label, row in got["stages"].items():
        print(f"  {label:34} {row['median_s']:8.3f} {row['p90_s']:8.3f} {row['mean_s']:8.3f}")


SETS = ("fresh", "rl", "cached")


SHARES = {"fresh": 2, "rl": 2, "prime": 2, "cached": 1}  # of --end-s: cached runs faster


def share_end(end: float | None, left: list[str]) -> float | None:
    """When the first of the sets ``left`` must end: its share (``SHARES``) of the time left."""
    if end is None:
        return None
    now = time.monotonic()
    return now + (end - now) * SHARES[left[0]] / sum(SHARES[s] for s in left)


def run_sets(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from kbx.suite import select

    task_ids = [t.id for t in select(args.tasks)][: args.limit]
    began = time.monotonic()
    end = began + args.end_s if args.end_s else None
    wanted = [s for s in SETS if s in args.sets]
    if "cached" in wanted and "fresh" not in wanted:
        wanted.insert(wanted.index("cached"), "prime")  # fills the Triton cache: not a figure
    out: dict[str, Any] = {"sets": {}}
    named = {"fresh" if s in ("prime", "cached") else s for s in wanted}
    out["keys"] = keys([r for s in sorted(named) for r in candidate_set(s, task_ids)], work)
    print(f"Triton cache keys of the variants' kernels: {out['keys']}", flush=True)
    for i, name in enumerate(wanted):
        rows = candidate_set("fresh" if name in ("prime", "cached") else name, task_ids)
        if name == "cached":  # the candidates whose kernels the fresh run compiled
            done = {
                (r["task"], r["sample"]) for r in out.get("prime", out["sets"].get("fresh"))["rows"]
            }
            rows = [r for r in rows if (r["file"], r["sample"]) in done]
        got = measure(name, rows, args, work, share_end(end, wanted[i:]))
        if name == "prime":
            out["prime"] = got
            print(f"prime: {got['candidates']} candidates in {got['wall_s']} s", flush=True)
            continue
        out["sets"][name] = got
        print_set(name, got)
    return out


def summary(out: dict[str, Any], tier: str) -> str:
    parts = [
        f"{name} {got['evals_per_s']}/s" + (" (cut)" if got["cut"] else "")
        for name, got in out["sets"].items()
    ]  # the targets (TARGETS) are for one H100's quick tier
    wrong = sum(len(got["false_rejections"]) for got in out["sets"].values())
    return f"{tier} tier: {', '.join(parts)}; {wrong} false rejections"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("sets", nargs="*", help=f"the candidate sets: {', '.join(SETS)}")
    p.add_argument("--device", choices=("cuda", "cpu"), default=None, help="default: cuda if any")
    p.add_argument("--tier", choices=("quick", "standard"), default="quick", help="kbx serve's")
    p.add_argument("--via", choices=("engine", "serve"), default="engine", help="in process, "
                   "or posted to a kbx serve on loopback (fresh and rl only)")  # fmt: skip
    p.add_argument("--jobs", type=int, default=None, help="candidates in flight (kbx's default)")
    p.add_argument("--config", type=Path, default=None, help="a kbx eval --config TOML")
    p.add_argument("--tasks", default=None, help="task globs, comma-separated (default: all)")
    p.add_argument("--limit", type=int, default=None, help="the first N of those tasks")
    p.add_argument("--end-s", type=float, default=None, help="end all the sets by then")
    p.add_argument("--baselines", type=Path, default=None, help="baseline cache (kbx eval's)")
    p.add_argument("--compare", type=Path, default=None, help="another run's --out: verdicts")
    p.add_argument("--given", type=Path, default=None, help="with --compare: this run's, not run")
    p.add_argument("--out", type=Path, default=None, help="the figures as JSON")
    p.add_argument("--work", type=Path, default=None, help="keep the runs' folders here")
    args = p.parse_args()
    if args.given and args.compare:  # two runs' figures, compared without running anything
        found = compare(
            json.loads(args.given.read_text())["sets"], json.loads(args.compare.read_text())
        )
        print(json.dumps(found, indent=1))
        return 1 if any(c["differ"] for c in found.values()) else 0
    if args.via == "serve" and "cached" in args.sets:
        p.error("cached needs a Triton cache the runs share: in process only")
    if not args.sets or set(args.sets) - set(SETS):
        p.error(f"name sets of {', '.join(SETS)}, or compare two runs (--given RUN --compare BASE)")
    if args.device is None:
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    work = args.work or Path(tempfile.mkdtemp(prefix="kbx-throughput-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        out = run_sets(args, work)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    out = {
        "title": f"throughput: new candidates through {VIA[args.via]} ({args.tier} tier)",
        "target": ", ".join(f"{k} {v:g}/s" for k, v in TARGETS.items())
        + " on one H100 (quick tier); no false rejection",
        "summary": summary(out, args.tier),
        "tier": args.tier,
        "via": args.via,
        "jobs": args.jobs,
        "tasks": args.tasks,
        "limit": args.limit,
        **out,
    }
    if args.compare:
        out["compare"] = compare(out["sets"], json.loads(args.compare.read_text()))
        print(f"verdicts against {args.compare}: {out['compare']}", flush=True)
    print(out["summary"], flush=True)
    if args.out:  # benchmarks/gpu.py adds the figure's name and its own command
        machine = evidence.machine(args.device)
        args.out.write_text(json.dumps({**machine, "argv": sys.argv[1:], **out}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
