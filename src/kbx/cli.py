"""Command line: one subcommand per verb, each a few lines calling the library."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from kbx import __version__

console = Console()


def cmd_tasks(args: argparse.Namespace) -> int:
    from kbx.suite import select

    tasks = select(category=args.category)
    if args.json:
        rows = [
            {
                "id": t.id,
                "category": t.category,
                "entry": t.entry,
                "paper": t.paper,
                "signature": t.signature,
                "aliases": list(t.aliases),
            }
            for t in tasks
        ]
        print(json.dumps(rows, indent=2))
        return 0
    for t in tasks:
        console.print(f"{t.id:48} {t.signature}", highlight=False, soft_wrap=True)
    console.print(f"{len(tasks)} tasks")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from kbx.show import describe_task
    from kbx.suite import find

    task = find(args.task)
    if task is None:
        console.print(f"[red]no task {args.task!r}[/red] (see `kbx tasks`)")
        return 2
    if args.prompt:
        from kbx.prompt import render

        print(render(task))
    else:
        print(describe_task(task))
    return 0


def cmd_prompts(args: argparse.Namespace) -> int:
    from kbx.prompt import render
    from kbx.suite import select

    tasks = select(args.tasks)
    with open(args.out, "w") as out:
        for t in tasks:
            row = {
                "file": f"{t.id}.py",
                "task_id": t.id,
                "entry": t.entry,
                "instruction": render(t),
            }
            out.write(json.dumps(row) + "\n")
    console.print(f"{len(tasks)} prompts written to {args.out}")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from kbx.evaluate.pipeline import EvalConfig
    from kbx.evaluate.sandbox import Limits
    from kbx.hardware import default_device, device_problem
    from kbx.report import category_table
    from kbx.runs import RunPlan, run_eval

    device = args.device or default_device()
    if problem := device_problem(device):
        console.print(f"[red]{problem}[/red]")
        return 2
    out = Path(args.out or f"runs/{time.strftime('%Y%m%d-%H%M%S')}")
    source = Path(args.source)
    if not source.exists():
        console.print(f"[red]{source}: no such file or folder[/red]")
        return 2
    if args.require_sandbox and (problem := sandbox_problem()):
        console.print(f"[red]{problem}[/red]")
        return 2
    gpus = [int(g) for g in args.gpus.split(",")] if args.gpus else None
    jobs = args.jobs or default_jobs(device) * (len(gpus) if gpus else 1)
    limits = Limits()
    if args.timeout_s:
        limits = replace(
            limits, import_s=args.timeout_s, case_s=args.timeout_s, timing_s=args.timeout_s
        )
    cfg = EvalConfig(
        device=device,
        perf=not args.no_perf,
        limits=limits,
        run_dir=out.resolve(),
        baseline_cache=None
        if args.baselines == "none"
        else Path(args.baselines or cache_dir() / "baselines.sqlite"),
        compile_baseline=not args.no_compile_baseline,
        profile=args.profile,
        fork=not args.no_fork_server,
        triton_cache=Path(args.triton_cache).resolve() if args.triton_cache else None,
        baselines_first=args.baselines_first,
    )
    with progress_bar() as bar:
        progress = bar.add_task("evaluating", total=None, last="")

        def started(plan: RunPlan) -> None:
            skipped = len(plan.candidates) - len(plan.todo)
            bar.update(
                progress,
                total=len(plan.todo),
                last=f"({skipped} already in {out})" if skipped else "",
            )

        summary = run_eval(
            source,
            out,
            cfg,
            jobs,
            args.tasks,
            on_start=started,
            on_result=lambda r: bar.update(progress, advance=1, last=f"{r.task_id}: {r.verdict}"),
            gpus=gpus,
            procs=args.procs,
        )
    from kbx.report import failures_table, load_records, print_notes

    records = load_records(out)
    console.print(category_table(records, title=f"{source} on {device}"))
    print_notes(records, console)
    if any(r["verdict"] != "passed" for r in records):
        console.print(failures_table(records, limit=20))
    console.print(f"results: {out / 'results.jsonl'}  summary: {out / 'summary.json'}")
    if summary["harness_errors"]:
        console.print(f"[red]{summary['harness_errors']} harness errors (kbx's fault)[/red]")
        return 3
    return 0


def sandbox_problem() -> str | None:
    """Why the sandbox is not at its full level here (``--require-sandbox``), or None."""
    from kbx.evaluate import confine

    level = confine.probe()
    if level.name == "full":
        return None
    return (
        f"the sandbox is {level.name} here (missing: {', '.join(level.missing)}); --require-sandbox"
    )


def cmd_validate(args: argparse.Namespace) -> int:
    import tempfile

    from rich.table import Table

    from kbx.evaluate.pipeline import EvalConfig
    from kbx.hardware import default_device, device_problem
    from kbx.suite import select
    from kbx.validate import TaskReport, validate

    device = args.device or default_device()
    if problem := device_problem(device):
        console.print(f"[red]{problem}[/red]")
        return 2
    tasks = select(args.tasks)
    jobs = args.jobs or default_jobs(device)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kbx-validate-") as run_dir, progress_bar() as bar:
        progress = bar.add_task("validating", total=len(tasks), last="")

        def done(r: TaskReport) -> None:
            bar.update(progress, advance=1, last=f"{r.task_id}: {'ok' if r.ok else 'FAILED'}")

        cfg = EvalConfig(device=device, run_dir=Path(run_dir), fork=not args.no_fork_server)
        reports = validate(tasks, cfg, jobs, on_done=done)
    failed = [r for r in reports if not r.ok]
    table = Table(
        title=f"kbx validate on {device}: {len(tasks) - len(failed)}/{len(tasks)} tasks "
        f"sound ({time.monotonic() - started:.0f} s)"
    )
    for col in ("task", "reference", "problems"):
        table.add_column(col, overflow="fold")
    for r in failed:
        table.add_row(r.task_id, r.probes.get("reference", "?"), "; ".join(r.failures)[:400])
    if failed:
        console.print(table)
    else:
        console.print(f"{table.title}: all passed")
    if args.json:
        rows = [
            {"task_id": r.task_id, "ok": r.ok, "probes": r.probes, "failures": r.failures}
            for r in reports
        ]
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 1 if failed else 0


class LogProgress(Progress):
    """A rich progress bar on a terminal; one plain line per finished item in logs and pipes."""

    def update(self, task_id: TaskID, **fields: Any) -> None:  # type: ignore[override]
        super().update(task_id, **fields)
        if not console.is_terminal and fields.get("advance"):
            t = self.tasks[task_id]
            print(
                f"[{int(t.completed)}/{int(t.total or 0)} {t.elapsed or 0:.0f}s] "
                f"{fields.get('last', '')}",
                flush=True,
            )


def progress_bar() -> Progress:
    return LogProgress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"),
        console=console,
        disable=not console.is_terminal,
    )


def cache_dir() -> Path:
    """Where kbx keeps what outlives a run: $KBX_CACHE_DIR, else $XDG_CACHE_HOME/kbx."""
    if os.environ.get("KBX_CACHE_DIR"):
        return Path(os.environ["KBX_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kbx"


def default_jobs(device: str) -> int:
    """Children in flight: the cores on the CPU; per GPU enough to hide start-up and compile."""
    cores = os.cpu_count() or 1
    return cores if device == "cpu" else max(2, min(8, cores // 2))


def cmd_report(args: argparse.Namespace) -> int:
    from kbx.report import print_report

    try:
        print_report(Path(args.run_dir), console, details=not args.brief)
    except FileNotFoundError as exc:
        console.print(f"[red]{exc}[/red]")
        return 2
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kbx", description="Evaluate LLM-generated Triton kernels on the KernelBench-X suite."
    )
    p.add_argument("--version", action="version", version=f"kbx {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("tasks", help="list the suite's tasks")
    t.add_argument("--category", help="only this category")
    t.add_argument("--json", action="store_true", help="JSON array of {id, category, entry, paper}")
    t.set_defaults(fn=cmd_tasks)
    s = sub.add_parser("show", help="show one task: contract, cases, benchmark sizes")
    s.add_argument("task", help="task id, e.g. Math/rsqrt")
    s.add_argument("--prompt", action="store_true", help="the instruction a model receives")
    s.set_defaults(fn=cmd_show)
    e = sub.add_parser("eval", help="evaluate a folder, a .py file or a KernelBench-X JSONL")
    e.add_argument("source", help="folder of <Category>/<name>.py, one .py, or a .jsonl")
    e.add_argument("--tasks", metavar="GLOB", help="only tasks whose id matches, e.g. 'Math/*'")
    e.add_argument(
        "--device",
        choices=("cuda", "cpu"),
        help="cuda (default when a GPU is visible) or cpu (Triton interpreter, no perf)",
    )
    e.add_argument(
        "--out",
        metavar="DIR",
        help="run folder (default runs/<timestamp>); re-running with the same folder resumes",
    )
    e.add_argument("--no-perf", action="store_true", help="skip timing on cuda")
    e.add_argument(
        "--jobs", type=int, help="candidates in flight (default: cores on cpu, 4 on cuda)"
    )
    e.add_argument(
        "--procs",
        type=int,
        default=None,
        help="worker processes driving the jobs, each with its own interpreter (default: one "
        "per GPU with --gpus, else 1)",
    )
    e.add_argument(
        "--profile",
        action="store_true",
        help="cross-check each timing with the "
        "torch profiler's kernel time (cases record profiler_ms)",
    )
    e.add_argument(
        "--gpus",
        metavar="LIST",
        help="spread the work over these visible GPUs, e.g. 0,1 (default: the current one)",
    )
    e.add_argument(
        "--baselines",
        metavar="FILE",
        help="SQLite cache of eager/torch.compile "
        "timings reused across runs (default: $KBX_CACHE_DIR/baselines.sqlite; "
        "'none': measure every run)",
    )
    e.add_argument(
        "--no-compile-baseline",
        action="store_true",
        help="time only PyTorch eager, not torch.compile of the reference",
    )
    e.add_argument(
        "--triton-cache",
        metavar="DIR",
        help="Triton kernel and autotuning cache to share across runs, so that re-evaluating the "
        "same kernels skips compiling and autotuning them (default: a fresh one in the run "
        "folder); share it only between runs whose candidates you trust alike",
    )
    e.add_argument(
        "--baselines-first",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="measure every baseline missing from the cache before any candidate runs, a task "
        "per core (the default: results start coming after that stage; --no-baselines-first "
        "measures each task's beside its candidate; docs/design/timing.md)",
    )
    e.add_argument(
        "--timeout-s",
        type=float,
        help="CPU seconds allowed for the import, each case and each timing (default 60, 120, "
        "120), with a wall-clock backstop four times larger",
    )
    e.add_argument(
        "--require-sandbox",
        action="store_true",
        help="refuse to run unless every sandbox layer is available here (docs/design/sandbox.md)",
    )
    e.add_argument(
        "--no-fork-server",
        action="store_true",
        help="start each candidate's process as a fresh Python (slower) instead of forking it "
        "from kbx's server with torch and triton already imported",
    )
    e.set_defaults(fn=cmd_eval)
    pr = sub.add_parser("prompts", help="write every task's prompt to a JSONL file")
    pr.add_argument("--out", required=True, metavar="FILE", help="JSONL: one {file, instruction}")
    pr.add_argument("--tasks", metavar="GLOB", help="only tasks whose id matches")
    pr.set_defaults(fn=cmd_prompts)
    v = sub.add_parser("validate", help="self-test of the suite (exit 1 on any failure)")
    v.add_argument("--tasks", metavar="GLOB", help="only tasks whose id matches")
    v.add_argument("--device", choices=("cuda", "cpu"))
    v.add_argument("--jobs", type=int, help="tasks in flight")
    v.add_argument("--json", metavar="FILE", help="also write every task's probes to FILE")
    v.add_argument(
        "--no-fork-server", action="store_true", help="a fresh Python per task's child process"
    )
    v.set_defaults(fn=cmd_validate)
    r = sub.add_parser("report", help="tables by category and verdict for a run folder")
    r.add_argument("run_dir")
    r.add_argument("--brief", action="store_true", help="no table of failures")
    r.set_defaults(fn=cmd_report)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from kbx.suite import LOAD_ERRORS, load_suite

    load_suite()
    for where, why in LOAD_ERRORS.items():
        console.print(f"[red]task file not loaded[/red] {where}: {why}", highlight=False)
    return int(args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
