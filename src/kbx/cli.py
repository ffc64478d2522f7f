"""Command line: one subcommand per verb, each a few lines calling the library."""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

from kbx.commands.runcmds import cmd_eval, cmd_validate
from kbx.commands.terminal import console, fail, fit_console, tasks_problem
from kbx.core.version import __version__
from kbx.run.backends import add_backend_options
from kbx.serve.command import add_serve


def cmd_tasks(args: argparse.Namespace) -> int:
    from kbx.suite import categories, select

    tasks = select(category=args.category)
    if args.category and not tasks:
        return fail(f"no category {args.category!r}; the categories: {', '.join(categories())}")
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
    from kbx.commands.show import describe_task
    from kbx.suite import find

    task = find(args.task)
    if task is None:
        return fail(f"no task {args.task!r} (`kbx tasks` lists them)")
    if args.prompt:
        from kbx.suite.prompt import render

        print(render(task))
    else:
        print(describe_task(task))
    return 0


def cmd_prompts(args: argparse.Namespace) -> int:
    from kbx.suite import select
    from kbx.suite.prompt import render

    if problem := tasks_problem(args.tasks):
        return fail(problem)
    tasks = select(args.tasks)
    rows = [
        {"file": f"{t.id}.py", "task_id": t.id, "entry": t.entry, "instruction": render(t)}
        for t in tasks
    ]
    out = Path(args.out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    except OSError as exc:
        return fail(f"{out}: cannot write it ({exc.strerror})")
    console.print(f"{len(tasks)} prompts written to {out}", highlight=False, soft_wrap=True)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from kbx.commands.report import NoResults, print_report

    try:
        print_report(Path(args.run_dir), console, details=not args.brief)
    except NoResults as exc:
        return fail(str(exc))
    return 0


def cmd_analyze(args: argparse.Namespace) -> int:
    try:
        from kbx.analyze.command import NoInput, analyze
    except ModuleNotFoundError as exc:  # pandas, statsmodels... come with the analysis extra
        return fail(f"kbx analyze needs {exc.name}: pip install 'kernelbench-x[analysis]'")

    if args.bootstrap < 1:
        return fail(f"--bootstrap {args.bootstrap}: want at least 1 resample")
    runs, kbx = [Path(r) for r in args.runs], Path(args.kernelbenchx) if args.kernelbenchx else None
    if len(args.name) > len(runs):
        return fail(f"{len(args.name)} --name for {len(runs)} RUN: at most one name per RUN")
    try:
        analyze(
            runs, Path(args.out), args.bootstrap, args.seed, console, kbx, args.name,
            pool=args.pool, over=args.over,
        )  # fmt: skip
    except NoInput as exc:
        return fail(str(exc))
    except OSError as exc:
        return fail(f"{exc.filename}: cannot write it ({exc.strerror})")
    return 0


def limit_blas_threads() -> None:
    """One BLAS thread before numpy loads: threaded BLAS slowed the bootstrap's matrix products
    on busy cores (kbx.analyze.bootstrap); a variable already set is kept."""
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")


def quiet_profiler() -> None:
    """torch's profiler (kineto) prints ``USDT: ... profiler_start`` lines on stderr at each
    session, over the progress bar; its level 6 is above all of its messages (the children
    get the same setting: ``kbx.sandbox.childenv``).  A level already set is kept."""
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")


def quiet_references() -> None:
    """torch's UserWarnings about a task's own reference (kl_div's ``reduction='mean'``, a
    convolution's ``padding='same'``) are the suite's, not the user's: printed in the parent as
    it computes references, they broke the progress lines.  Only warnings raised from the task
    files are dropped; a candidate's go to its own stderr."""
    warnings.filterwarnings("ignore", category=UserWarning, module=r"kbx\.tasks\.")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kbx", description="Evaluate LLM-generated Triton kernels on the KernelBench-X suite."
    )
    p.add_argument("--version", action="version", version=f"kbx {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def command(name: str, about: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=about, description=about)

    t = command("tasks", "list the suite's tasks: id and entry signature, one a line")
    t.add_argument("--category", help="only this category, in any case (e.g. fusion)")
    t.add_argument(
        "--json",
        action="store_true",
        help="print a JSON array of {id, category, entry, paper, signature, aliases} instead",
    )
    t.set_defaults(fn=cmd_tasks)
    s = command(
        "show", "show one task: signature, description, precision, tolerance, cases, bench sizes"
    )
    s.add_argument("task", help="task id, e.g. Math/rsqrt (or its name alone, rsqrt)")
    s.add_argument(
        "--prompt", action="store_true", help="print the instruction a model receives instead"
    )
    s.set_defaults(fn=cmd_show)
    e = sub.add_parser(
        "eval",
        help="evaluate a folder, a .py file or a KernelBench-X JSONL",
        description="Evaluate each candidate of SOURCE in a sandboxed child: its verdict and, on "
        "cuda, its speedup over PyTorch.  Every result is stored in the run folder (--out) as it "
        "comes, so the same command again, after a Ctrl-C or a crash, resumes the run: it skips "
        "the candidates already there.  Tuning knobs (jobs, limits...) come from --config FILE "
        "(docs/configuration.md).",
    )
    e.add_argument("source", help="folder of <Category>/<name>.py, one .py, or a .jsonl")
    e.add_argument(
        "--tasks", metavar="GLOB", help="only tasks whose id matches, in any case, e.g. 'Math/*'"
    )
    e.add_argument(
        "--task",
        metavar="ID",
        help="the task of a lone .py file whose name does not say it, e.g. Math/rsqrt",
    )
    e.add_argument(
        "--device",
        choices=("cuda", "cpu"),
        help="cuda (default when a GPU is visible) or cpu (Triton interpreter, no perf)",
    )
    e.add_argument(
        "--out",
        metavar="DIR",
        help="run folder (default runs/<timestamp>); the same command again resumes it",
    )
    e.add_argument("--no-perf", action="store_true", help="correctness only: no timing on cuda")
    e.add_argument(
        "--gpus",
        metavar="LIST",
        help="spread the work over these visible GPUs, e.g. 0,1 (default: the current one)",
    )
    e.add_argument(
        "--baselines",
        metavar="FILE",
        help="SQLite cache of eager/torch.compile timings reused across runs (default: "
        "$KBX_CACHE_DIR/baselines.sqlite; 'none': measure them in every run)",
    )
    e.add_argument(
        "--timeout-s",
        type=float,
        metavar="S",
        help="CPU seconds allowed for the import, each case and each timing (default: 60, 120 "
        "and 120), with a wall-clock backstop four times larger",
    )
    e.add_argument(
        "--config",
        metavar="FILE",
        help="TOML file of tuning knobs: jobs, worker processes, fork server, spares, limits... "
        "(docs/configuration.md); the resolved configuration is written to the run folder",
    )
    e.add_argument(
        "--require-sandbox",
        action="store_true",
        help="refuse to run unless every sandbox layer is available here (docs/design/sandbox.md)",
    )
    add_backend_options(e)
    e.set_defaults(fn=cmd_eval)
    pr = command("prompts", "write each task's prompt, the instruction a model receives, to JSONL")
    pr.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="the JSONL file to write, its folder made if missing: one {file, task_id, entry, "
        "instruction} a task",
    )
    pr.add_argument("--tasks", metavar="GLOB", help="only tasks whose id matches, e.g. 'Math/*'")
    pr.set_defaults(fn=cmd_prompts)
    v = command(
        "validate",
        "self-test of the suite: each task's PyTorch reference passes as a candidate and generic "
        "wrong outputs are rejected (exit 1 on any failure)",
    )
    v.add_argument("--tasks", metavar="GLOB", help="only tasks whose id matches, e.g. 'Math/*'")
    v.add_argument(
        "--device",
        choices=("cuda", "cpu"),
        help="cuda (default when a GPU is visible) or cpu (Triton interpreter)",
    )
    v.add_argument(
        "--config", metavar="FILE", help="TOML file of tuning knobs (jobs, fork server...)"
    )
    v.add_argument(
        "--json",
        metavar="FILE",
        help="also write a JSON array of {task_id, ok, probes, failures} to FILE",
    )
    v.set_defaults(fn=cmd_validate)
    r = command(
        "report", "print a run's tables: verdicts and speedups by category, failed candidates"
    )
    r.add_argument("run_dir", metavar="DIR", help="the run folder, as given to `kbx eval --out`")
    r.add_argument("--brief", action="store_true", help="leave out the table of failures")
    r.set_defaults(fn=cmd_report)
    a = command(
        "analyze",
        "statistics over runs with bootstrap intervals: analysis.json, results.csv, "
        "results.parquet and report.html in --out (docs/design/analysis.md)",
    )
    a.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="a kbx run folder (results.jsonl; labelled by its records' method and model, else "
        "by its folder's name) "
        "or a KernelBench-X results folder (<gpu>/<method>/metrics.json)",
    )
    a.add_argument("--out", required=True, metavar="DIR", help="folder to write, made if missing")
    a.add_argument(
        "--bootstrap",
        type=int,
        default=10_000,
        metavar="B",
        help="bootstrap resamples over tasks, within category (default 10000)",
    )
    a.add_argument("--seed", type=int, default=0, metavar="N", help="bootstrap seed (default 0)")
    a.add_argument(
        "--name",
        action="append",
        default=[],
        metavar="NAME",
        help="the label of the n-th RUN's records (once per RUN, in order; default: their "
        "method and model, else the folder's name)",
    )
    a.add_argument(
        "--pool",
        action="store_true",
        help="count RUNs that share a label as one run (default: refuse to merge them)",
    )
    a.add_argument(
        "--over",
        choices=("attempted", "suite"),
        default="attempted",
        help="the rates' denominator: the tasks each run attempted (default) or the whole suite",
    )
    a.add_argument(
        "--kernelbenchx",
        metavar="DIR",
        help="also write the released harness's <gpu>/<method>/metrics.json and summary.json",
    )
    a.set_defaults(fn=cmd_analyze)
    from kbx.generate.command import add_parsers

    add_parsers(command)
    add_serve(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    quiet_profiler()
    quiet_references()
    if args.command == "analyze":
        limit_blas_threads()
    try:
        from kbx.suite import load_errors

        fit_console()
        for where, why in load_errors().items():
            console.print(f"[red]task file not loaded[/red] {where}: {why}", highlight=False)
        return int(args.fn(args))
    except KeyboardInterrupt:  # before a command's own handling (loading torch and the suite)
        console.print("interrupted before anything ran", highlight=False)
        return 130


if __name__ == "__main__":
    sys.exit(main())
