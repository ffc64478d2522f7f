"""The commands that run candidates: ``kbx eval`` (through an Evaluator, resumable, with a
progress bar) and ``kbx validate`` (the suite's self-test)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from rich.text import Text

from kbx.commands.terminal import console, fail, progress_bar, tasks_problem
from kbx.suite.verdict import Verdict

NOT_TASKS = (Verdict.UNKNOWN_TASK, Verdict.UNREADABLE)  # candidates that name no suite task


def cmd_eval(args: argparse.Namespace) -> int:
    """``kbx eval``; a Ctrl-C at any point ends it with a one-line hint and exit code 130."""
    out = Path(args.out or f"runs/{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        return evaluate_source(args, out)
    except KeyboardInterrupt:
        return interrupted(out, same_command=bool(args.out))


def evaluate_source(args: argparse.Namespace, out: Path) -> int:
    from kbx.core.config import ConfigError, load_tuning
    from kbx.gpu.hardware import default_device, device_problem
    from kbx.run import backends
    from kbx.run.evaluator import DEFAULT, Evaluator

    device = args.device or default_device()
    if problem := device_problem(device):
        return fail(problem)
    source = Path(args.source)
    if problem := source_problem(source, args.tasks, args.task):
        return fail(problem)
    if args.require_sandbox and (problem := sandbox_problem()):
        return fail(problem)
    try:
        tuning = load_tuning(Path(args.config) if args.config else None)
    except ConfigError as exc:
        return fail(str(exc))
    tuning = tuning.model_copy(update={"limits": tuning.limits.with_timeout(args.timeout_s)})
    gpus = [int(g) for g in args.gpus.split(",")] if args.gpus else None
    baselines = None if args.baselines == "none" else Path(args.baselines or DEFAULT)
    try:
        backend = backends.choose(args.backend, args.ray_address, device, not args.no_perf, tuning)
    except ValueError as exc:
        return fail(str(exc))
    ev = Evaluator(
        device,
        gpus=gpus,
        perf=not args.no_perf,
        run_dir=out,
        baselines=baselines,
        tuning=tuning,
        backend=backend,
    )
    with ev:  # a Ctrl-C closes it with its children killed (``Scheduler.close``)
        summary = run_with_progress(source, out, ev, args.tasks, args.task)
    return print_run(source, out, device, summary)


def interrupted(out: Path, same_command: bool, wait_s: float = 2.0, hint: str | None = None) -> int:
    """After a Ctrl-C, once the Evaluator has closed (its children killed, the results exported):
    the one-line hint, and 130, a Ctrl-C's exit code.  SIGINT is ignored meanwhile: a second
    Ctrl-C would print a traceback over the hint.  A job thread still judging a child that
    finished just before the Ctrl-C would keep the interpreter alive until it is done: after
    ``wait_s`` the process ends at once instead (``os._exit``, its output flushed), as that
    thread's result is dropped anyway.  ``hint`` replaces the line for commands whose run folder
    holds no store (``kbx generate``, ``kbx run``)."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        line = Text(hint or resume_hint(out, same_command), style="yellow")
        console.print(line, soft_wrap=True)  # one line, however long
        end = time.monotonic() + wait_s
        others = [t for t in threading.enumerate() if t is not threading.current_thread()]
        for thread in (t for t in others if not t.daemon):
            thread.join(max(0.0, end - time.monotonic()))
        if any(t.is_alive() and not t.daemon for t in others):
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)
        return 130
    finally:
        signal.signal(signal.SIGINT, previous)


def resume_hint(out: Path, same_command: bool) -> str:
    """What an interrupted run left and how to go on from it."""
    if not (out / "kbx.sqlite").exists():
        return "interrupted before the run began"
    done = f"interrupted: the results so far are in {out}"
    if same_command:
        return f"{done}; run the same command again to resume"
    return f"{done}; add --out {out} to resume"  # the default folder: named for the time


def run_with_progress(
    source: Path, out: Path, ev: Any, pattern: str | None, task: str | None = None
) -> dict[str, Any]:
    """``run_eval`` with its progress (``kbx.commands.progress``): one line per result in logs
    and pipes."""
    from kbx.commands.progress import Watch, baselines_title
    from kbx.run.plan import RunPlan, run_eval

    with progress_bar() as bar, Watch(bar, ev.running, run_dir=out) as watch:
        tasks = [0]

        def started(plan: RunPlan) -> None:
            skipped = len(plan.candidates) - len(plan.todo)
            last = f"({skipped} already in {out})" if skipped else ""
            bar.update(watch.candidates, total=len(plan.todo), last=last)
            tasks[0] = len({c.task_id for c in plan.todo})

        def baseline(task_id: str, left: int) -> None:
            compile_too = ev.config.tuning.compile_baseline
            title = baselines_title(gpu_name(ev.config.device), left, tasks[0], compile_too)
            watch.baseline(title, task_id, left)

        return run_eval(
            source,
            out,
            ev,
            pattern,
            on_start=started,
            on_result=watch.result,
            on_baseline=baseline,
            task=task,
        )


def gpu_name(device: str) -> str:
    """The GPU's model, as the baselines cache keys it (``this GPU`` where it cannot be read)."""
    from kbx.gpu.hardware import fingerprint

    try:
        return str(fingerprint(device)["gpu"] or "this GPU")
    except Exception:  # noqa: BLE001 - a title only
        return "this GPU"


def print_run(source: Path, out: Path, device: str, summary: dict[str, Any]) -> int:
    """The run's tables; exit 3 if kbx itself failed on some candidate."""
    from kbx.commands.report import category_table, failures_table, load_records, print_notes

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


def source_problem(source: Path, pattern: str | None, task: str | None = None) -> str | None:
    """Why a run of ``source`` (``--tasks pattern``, ``--task task``) would evaluate nothing, or
    would judge no task of the suite, or None."""
    from kbx.core.candidate import read_source
    from kbx.run.plan import keep

    if not source.exists():
        return f"{source}: no such file or folder"
    if problem := tasks_problem(pattern) or task_problem(source, task):
        return problem
    try:
        candidates = read_source(source, task)
    except ValueError as exc:  # neither a folder, a .py nor a .jsonl
        return str(exc)
    if not candidates:
        return f"no candidates in {source} (a folder of <Category>/<name>.py, a .py or a .jsonl)"
    if not any(keep(c, pattern) for c in candidates):
        return f"no candidate in {source} is for a task of --tasks {pattern!r}"
    why = [c.problem[1] for c in candidates if c.problem and c.problem[0] in NOT_TASKS]
    if len(why) == len(candidates):
        lone = "; name it with --task ID" if source.suffix == ".py" else ""
        return f"no candidate in {source} names a task of the suite ({why[0]}){lone}"
    return None


def task_problem(source: Path, task: str | None) -> str | None:
    """Why ``--task`` cannot name the task of ``source``, or None."""
    from kbx.suite import find

    if task is None:
        return None
    if source.suffix != ".py" or source.is_dir():
        return f"--task names the task of a lone .py file, not of {source}"
    if find(task) is None:
        return f"--task {task!r}: no such task (ids look like Math/rsqrt; `kbx tasks` lists them)"
    return None


def sandbox_problem() -> str | None:
    """Why the sandbox is not at its full level here (``--require-sandbox``), or None."""
    from kbx.sandbox import confine

    level = confine.probe()
    if level.name == "full":
        return None
    return (
        f"the sandbox is {level.name} here (missing: {', '.join(level.missing)}); --require-sandbox"
    )


def cmd_validate(args: argparse.Namespace) -> int:
    import tempfile

    from rich.table import Table

    from kbx.commands.validate import TaskReport, validate
    from kbx.core.config import ConfigError, EvalConfig, load_tuning
    from kbx.gpu.hardware import default_device, device_problem
    from kbx.run.scheduler import default_jobs
    from kbx.suite import select

    device = args.device or default_device()
    if problem := device_problem(device) or tasks_problem(args.tasks):
        return fail(problem)
    try:
        tuning = load_tuning(Path(args.config) if args.config else None)
    except ConfigError as exc:
        return fail(str(exc))
    tasks = select(args.tasks)
    jobs = tuning.jobs or default_jobs(device)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kbx-validate-") as run_dir, progress_bar() as bar:
        progress = bar.add_task("validating", total=len(tasks), last="")

        def done(r: TaskReport) -> None:
            bar.update(progress, advance=1, last=f"{r.task_id}: {'ok' if r.ok else 'FAILED'}")

        cfg = EvalConfig(device=device, run_dir=Path(run_dir), tuning=tuning)
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
