"""Harness throughput on the GPU: evaluate solutions/reference twice (cold, then warm baselines).

A benchmark, not a test: it prints figures and writes them to a JSON file.
    PYTHONPATH=src python benchmarks/harness_throughput.py --gpus 0 --profile \
        --out throughput.json  # or python benchmarks/gpu.py throughput
Cold run: no baselines cached (every eager and torch.compile baseline measured; the figures'
cold_cached_kernels says how many kernels it found compiled in --triton-cache, and
cold_known_durations for how many tasks the cache had job times to order the run by;
torch.compile's baselines compile with inductor's caches empty, cold_inductor_cache).  Warm runs
1 and 2: the same cache.  Every run compiles the candidates' kernels afresh (its own Triton
cache), as a run over new candidates must, unless --triton-cache gives the runs one shared
kernel and autotuning cache (a re-evaluation of the same kernels; the figures say which).
Repeatability: median over tasks of |log(speedup warm 1 / speedup warm 2)|.  With --profile,
warm run 2 also times every case with the torch profiler (after its event timing, which it
does not disturb) and reports the fraction of cases over 50 us whose event timing is within 10%
of the profiler's kernel time.  --work keeps the runs' stores (records survive a time limit);
--prime adds an untimed run before the warm ones to fill the --triton-cache.  cpu_busy_cold and
cpu_busy_warm: the share of the run's cores that was busy (not idle) over each run; cpu_s_cold
and cpu_s_warm: CPU seconds of those cores (busy), of the candidates' children that finished
(with the ptxas runs they waited for), of the baseline workers, and of this parent process.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch

from kbx.core.config import Tuning
from kbx.evaluate.baselines import BaselineCache, open_baselines
from kbx.gpu.hardware import fingerprint
from kbx.run.evaluator import Evaluator
from kbx.run.plan import run_eval

ROOT = Path(__file__).resolve().parent.parent
CORES = sorted(os.sched_getaffinity(0))  # the CPUs this run may use (taskset), before kbx keeps
# one per GPU for its timing turns (kbx.gpu.cores)


def gpu_list(args: argparse.Namespace) -> list[int]:
    """The GPUs of ``--gpus 0,1``."""
    return [int(g) for g in args.gpus.split(",")]


def cpu_times() -> tuple[int, int]:
    """Busy and total jiffies so far of CORES (``/proc/stat``; zeros where there is none)."""
    busy = total = 0
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return 0, 0
    wanted = {f"cpu{c}" for c in CORES}
    for line in lines:
        name, *fields = line.split()
        if name in wanted:
            ticks = [int(f) for f in fields[:8]]
            total += sum(ticks)
            busy += sum(ticks) - ticks[3] - ticks[4]  # less idle and iowait
    return busy, total


def one_run(out: Path, cache: Path, args: argparse.Namespace, profile: bool = False) -> dict:
    gpus = gpu_list(args)
    tuning = Tuning(
        jobs=args.jobs * len(gpus),
        procs=args.procs,
        profile=profile,
        compile_baseline=not args.no_compile_baseline,
        triton_cache=args.triton_cache,
        baselines_first=args.baselines_first,
        baseline_workers=args.baseline_workers,
        check_threads=args.check_threads,
        trace=args.trace,
    )
    cache_file = cache / "baselines.sqlite"
    shutil.rmtree(out, ignore_errors=True)  # a store left by an earlier run would be resumed
    began_utc = time.strftime("%H:%M:%S", time.gmtime())  # to line up with nvidia-smi's samples
    started, cpu_before, began_epoch = time.monotonic(), cpu_times(), time.time()
    baselines = open_baselines(cache_file)  # the run's, whose workers' CPU is counted
    parent_before, workers_before = own_cpu_s(), baselines.worker_cpu_s
    done: dict[str, Any] = {"n": 0, "baselines": 0, "baselines_s": None}

    def baseline_done(task_id: str, left: int) -> None:
        if not task_id:  # the stage begins, with ``left`` tasks to measure
            return
        done["baselines"] += 1
        done["baselines_s"] = time.monotonic() - started  # the stage's wall time, at its end
        if done["baselines"] % 20 == 0 or not left:
            print(
                f"  {out.name}: baselines of {done['baselines']} tasks, {left} left, "
                f"{done['baselines_s']:.0f} s, workers' CPU "
                f"{baselines.worker_cpu_s - workers_before:.0f} s",
                flush=True,
            )

    def tick(result: Any) -> None:
        done["n"] += 1
        if done["n"] % 20 == 0:
            print(f"  {out.name}: {done['n']} done, {time.monotonic() - started:.0f} s", flush=True)

    with Evaluator("cuda", gpus=gpus, run_dir=out, baselines=cache_file, tuning=tuning) as ev:
        summary = run_eval(
            ROOT / "solutions" / "reference",
            out,
            ev,
            args.tasks,
            on_result=tick,
            on_baseline=baseline_done,
        )
    wall, cpu_after = time.monotonic() - started, cpu_times()
    ticks = cpu_after[1] - cpu_before[1]
    cpu_busy = round((cpu_after[0] - cpu_before[0]) / ticks, 3) if ticks > 0 else None
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    stages: dict[str, float] = defaultdict(float)
    for r in records:
        for k, v in (r.get("stage_s") or {}).items():
            stages[k] += v
    cpu_s = {  # where the run's CPU time went, in CPU seconds
        "busy": round((cpu_after[0] - cpu_before[0]) / os.sysconf("SC_CLK_TCK"), 1),
        "children": round(stages.pop("child_cpu", 0.0), 1),  # those that got to "done"
        "baseline_workers": round(baselines.worker_cpu_s - workers_before, 1),
        "parent": round(own_cpu_s() - parent_before, 1),
    }
    print(
        f"{out.name}: {wall:.1f} s wall, {summary['counts']}, cores busy {cpu_busy} "
        f"({began_utc}-{time.strftime('%H:%M:%S', time.gmtime())} UTC)",
        flush=True,
    )
    if args.keep:  # what held the GPU lock (scripts/lock_report.py)
        for log in out.glob("gpu*.lock.log"):
            args.keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(log, args.keep / f"{out.name}-{log.name}")
    print(f"{out.name}: CPU seconds {cpu_s}", flush=True)
    span = job_span(records, began_epoch)
    print(f"{out.name}: first job began, last ended (s into the run): {span}", flush=True)
    return {
        "first_job_s": span[0],
        "wall_s": wall,
        "records": records,
        "stage_s": dict(stages),
        "cpu_busy": cpu_busy,
        "cpu_s": cpu_s,
        "baselines_s": done["baselines_s"],  # --baselines-first: the first stage's wall time
    }


def job_span(records: list[dict], began_epoch: float) -> tuple[float | None, float | None]:
    """When the run's first job began and its last ended, in seconds after the run began: the
    time before the first is the set-up of the run's processes, fork servers and baselines
    stage; after the last, the run's end."""
    spans = [
        (r["started_at"], r["started_at"] + (r.get("duration_s") or 0.0))
        for r in records
        if r.get("started_at")
    ]
    if not spans:
        return None, None
    first, last = min(s[0] for s in spans), max(s[1] for s in spans)
    return round(first - began_epoch, 2), round(last - began_epoch, 2)


def own_cpu_s() -> float:
    """CPU seconds of this process (the harness's parent: its job, reference and baseline
    threads) so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def repeatability(a: list[dict], b: list[dict]) -> float | None:
    first = {r["task_id"]: r["speedup"] for r in a if r.get("speedup")}
    ratios = [
        abs(math.log(first[r["task_id"]] / r["speedup"]))
        for r in b
        if r.get("speedup") and r["task_id"] in first
    ]
    return statistics.median(ratios) if ratios else None


def profiler_agreement(records: list[dict]) -> float | None:
    cases = [
        c
        for r in records
        for c in r.get("cases", [])
        if c.get("profiler_ms") and c["kernel_ms"] > 0.05
    ]
    if not cases:
        return None
    close = [c for c in cases if abs(c["kernel_ms"] - c["profiler_ms"]) <= 0.1 * c["profiler_ms"]]
    return len(close) / len(cases)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpus", default="0")
    p.add_argument("--jobs", type=int, default=12, help="jobs per GPU")
    p.add_argument("--tasks", default=None, help="task globs (default: the whole suite)")
    p.add_argument("--profile", action="store_true", help="profiler cross-check in warm run 2")
    p.add_argument("--out", type=Path, help="JSON file for the figures (required to run)")
    p.add_argument(
        "--phase",
        choices=("all", "cold", "warm"),
        default="all",
        help="cold: one run with an empty baseline cache; warm: two runs on the cache, merged "
        "into --out (for machines that cannot do both in one session)",
    )
    p.add_argument(
        "--no-compile-baseline",
        action="store_true",
        help="eager baselines only (figures then do not meet the cold-run definition)",
    )
    p.add_argument(
        "--triton-cache",
        type=Path,
        default=None,
        help="Triton kernel/autotuning cache shared by the runs (default: each run compiles "
        "afresh); the figures record which",
    )
    p.add_argument("--cache", type=Path, default=None, help="baseline cache folder (kept)")
    p.add_argument("--keep", type=Path, default=None, help="folder for each run's results.jsonl")
    p.add_argument(
        "--work",
        type=Path,
        default=None,
        help="folder for the runs' stores and lock logs (default: a temporary one); kept, so "
        "that a run stopped by a time limit leaves its records (each is in the run's store as "
        "soon as it is done: `python -m kbx.cli report` or kbx.run.store.export read them)",
    )
    p.add_argument(
        "--prime",
        action="store_true",
        help="warm phase: one run first whose figures are dropped, to fill the --triton-cache "
        "on a machine that has the baselines but not the kernels",
    )
    p.add_argument(
        "--warm-runs",
        type=int,
        choices=(0, 1, 2),
        default=2,
        help="1: one warm run only (its wall time; no repeatability or profiler figures); "
        "0 with --prime: the priming run alone",
    )
    p.add_argument(
        "--baselines-first",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="measure every missing baseline before any candidate runs (the default, as in "
        "kbx eval); the figures' cold_baselines_s is that stage's wall time",
    )
    p.add_argument(
        "--baseline-workers",
        type=int,
        default=None,
        help="with --baselines-first: tasks measured at once per GPU (default: a task per core)",
    )
    p.add_argument(
        "--check-threads",
        type=int,
        default=None,
        help="torch threads of the parent, which checks the outputs (default: a quarter of the "
        "cores; Tuning.check_threads)",
    )
    p.add_argument(
        "--procs",
        type=int,
        default=None,
        help="worker processes driving the jobs (kbx.run.workers; default: one per GPU, "
        "kbx.run.evaluator.LocalBackend)",
    )
    p.add_argument(
        "--trace",
        action="store_true",
        help="the processes' start-up marks on stderr (kbx.core.trace)",
    )
    p.add_argument("--source-hash", action="store_true", help="print source_hash and exit")
    args = p.parse_args()
    if args.source_hash:
        print(source_hash())
        return 0
    if args.out is None:
        p.error("--out is required")
    if args.warm_runs == 0 and not args.prime:
        p.error("--warm-runs 0 is the priming run alone: it needs --prime")
    merge_cold = args.phase == "warm" and args.out.exists()
    figures: dict[str, Any] = json.loads(args.out.read_text()) if merge_cold else {}
    with tempfile.TemporaryDirectory(prefix="kbx-throughput-") as tmp:
        base = args.work or Path(tmp)
        cache = args.cache or base / "cache"
        if args.phase in ("all", "cold"):
            baselines = BaselineCache(cache / "baselines.sqlite")
            baselines.clear_baselines()  # job times (the scheduler's order) stay
            figures["cold_known_durations"] = len(baselines.durations())
            kernels = cached_kernels(args.triton_cache)  # what the cold run finds compiled
            # torch.compile's baselines compile afresh: inductor's caches (its FX graphs and
            # their Triton kernels) in an empty folder, which the baseline workers inherit
            inductor = base / "cold-inductor"
            shutil.rmtree(inductor, ignore_errors=True)
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(inductor)
            os.environ.pop("TRITON_CACHE_DIR", None)  # else inductor's kernels would go there
            figures["cold_inductor_cache"] = "empty"
            cold = one_run(base / "cold", cache, args)
            figures["cold_cached_kernels"] = kernels
            keep(cold, args.keep, "cold")
            figures.update(cold_s=round(cold["wall_s"], 1), stages_cold_s=cold["stage_s"])
            figures["cpu_busy_cold"] = cold["cpu_busy"]  # share of the run's cores kept busy
            figures["cpu_s_cold"] = cold["cpu_s"]
            figures["passed_cold"] = passed(cold)
            figures["cold_baselines_s"] = cold["baselines_s"]
            write(args, figures)
        if args.phase in ("all", "warm"):
            if args.prime:
                primed = one_run(base / "prime", cache, args)
                figures.update(prime_s=round(primed["wall_s"], 1))
                if args.warm_runs == 0:  # the kernels compiled, for later calls on this machine
                    return finish(args, figures)
            warm = one_run(base / "warm1", cache, args)
            keep(warm, args.keep, "warm1")
            figures.update(warm_s=round(warm["wall_s"], 1), stages_warm_s=warm["stage_s"])
            figures["warm_first_job_s"] = warm["first_job_s"]
            figures["cpu_busy_warm"] = warm["cpu_busy"]
            figures["cpu_s_warm"] = warm["cpu_s"]
            write(args, figures)  # a second run cut off by a time limit leaves the first's figures
            if args.warm_runs < 2:
                figures.update(passed_warm=passed(warm), candidates=len(warm["records"]))
                return finish(args, figures)
            again = one_run(base / "warm2", cache, args, profile=args.profile)
            keep(again, args.keep, "warm2")
            figures.update(
                warm2_s=round(again["wall_s"], 1),
                repeatability=repeatability(warm["records"], again["records"]),
                profiler_agreement=profiler_agreement(again["records"]) if args.profile else None,
                passed_warm=passed(warm),
                candidates=len(warm["records"]),
            )
    return finish(args, figures)


def passed(run: dict) -> int:
    return sum(r["verdict"] == "passed" for r in run["records"])


def finish(args: argparse.Namespace, figures: dict[str, Any]) -> int:
    """Add what the figures depend on, write them, print them."""
    fp = fingerprint("cuda")
    figures.setdefault("cold_s", None)  # a warm-only file (the two-GPU one) says it has none
    figures.update(
        gpu=fp["gpu"],
        gpus=args.gpus,
        driver=fp["driver"],
        torch=fp["torch"],
        triton=fp["triton"],
        date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        jobs_per_gpu=args.jobs,
        cores=len(CORES),  # the CPUs this run could use (taskset)
        shared_triton_cache=args.triton_cache is not None,
        baselines_first=args.baselines_first,
        baseline_workers=args.baseline_workers,
        check_threads=torch.get_num_threads(),  # the parent's, as the scheduler set them
        procs=args.procs or (len(gpu_list(args)) if len(gpu_list(args)) > 1 else 1),
        src_sha256=source_hash(),  # the code that ran, where a copied tree's .git is stale
        git=subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        or None,
    )
    figures.setdefault("commands", []).append(
        f"python benchmarks/harness_throughput.py --gpus {args.gpus} --jobs {args.jobs} "
        f"--phase {args.phase}"
        + (" --profile" if args.profile else "")
        + (" --no-compile-baseline" if args.no_compile_baseline else "")
        + (f" --triton-cache {args.triton_cache}" if args.triton_cache else "")
        + (" --prime" if args.prime else "")
        + ("" if args.baselines_first else " --no-baselines-first")
        + (f" --baseline-workers {args.baseline_workers}" if args.baseline_workers else "")
        + (f" --warm-runs {args.warm_runs}" if args.warm_runs != 2 else "")
        + (f" --check-threads {args.check_threads}" if args.check_threads else "")
        + (f" --procs {args.procs}" if args.procs else "")
    )
    write(args, figures)
    print(json.dumps({k: v for k, v in figures.items() if not k.startswith("stages")}, indent=1))
    return 0


def cached_kernels(folder: Path | None) -> int:
    """Kernels in the shared Triton cache before a run: 0 means the run compiled every kernel
    afresh; a cold run after another run of the same candidates measures the baselines only."""
    if folder is None or not folder.exists():
        return 0
    return sum(1 for _ in folder.rglob("*.cubin"))


def source_hash() -> str:
    """sha256 over kbx's source files (paths and contents), to name the code that ran: compare
    with ``python benchmarks/harness_throughput.py --source-hash`` on a checkout."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "src" / "kbx").rglob("*.py")):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def write(args: argparse.Namespace, figures: dict[str, Any]) -> None:
    args.out.write_text(json.dumps(figures, indent=1) + "\n")


def keep(run: dict, folder: Path | None, name: str) -> None:
    if folder:
        folder.mkdir(parents=True, exist_ok=True)
        lines = "".join(json.dumps(r) + "\n" for r in run["records"])
        (folder / f"{name}.jsonl").write_text(lines)


if __name__ == "__main__":
    raise SystemExit(main())
