"""``kbx generate`` and ``kbx run``: the parsers, and the commands that read flags, the
environment and a TOML file into a ``RunConfig``, probe the endpoint, run the method with a
progress bar, and (for ``kbx run``) evaluate the final round and write the analysis.  They fail
loudly: no endpoint or a dead one stops them before the first task (exit 2), calls that failed
after their retries are tabled and end them with exit 1 unless partial runs are accepted.  A
Ctrl-C stops them within a second or two (exit 130); the same command resumes from the cache."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.table import Table as RichTable
from rich.text import Text

from kbx.commands.terminal import console, fail, progress_bar, tasks_problem
from kbx.generate.config import PRESETS, ClientConfig, Price, RunConfig, preset

EXTRA = ("openai", "aiolimiter", "rank_bm25")  # the generate extra's modules


def add_parsers(command: Any) -> None:
    """Registers ``generate`` and ``run`` through cli.py's ``command(name, about)``."""
    g = command("generate", "generate kernels with a method over an OpenAI-compatible endpoint")
    add_options(g)
    g.set_defaults(fn=cmd_generate)
    r = command("run", "generate, evaluate the final kernels and write the analysis, resumably")
    add_options(r)
    r.add_argument(
        "--bootstrap", type=int, default=1000, metavar="B", help="analysis resamples (1000)"
    )
    r.set_defaults(fn=cmd_run)


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--method", required=True, choices=PRESETS, help="the method preset")
    p.add_argument("--out", required=True, metavar="DIR", help="run folder; again: resume it")
    p.add_argument("--tasks", metavar="GLOB", help="only tasks whose id matches, e.g. 'Math/*'")
    p.add_argument("--samples", type=int, metavar="N", help="one-shot samples per task (pass@k)")
    p.add_argument(
        "--base-url",
        metavar="URL",
        help="the OpenAI-compatible server, e.g. http://localhost:8000/v1 (default "
        "$OPENAI_BASE_URL; docs/design/generate.md has vLLM, SGLang, DeepSeek, OpenRouter)",
    )
    p.add_argument(
        "--model",
        metavar="ID",
        help="model id (default: the preset's, or [client] model of --config)",
    )
    p.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        metavar="VAR",
        help="the variable holding the API key (default OPENAI_API_KEY; none for local servers)",
    )
    p.add_argument("--device", choices=("cuda", "cpu"), help="where the evaluator runs")
    p.add_argument("--config", metavar="FILE", help="TOML: [method], [client], [prices.MODEL]")
    p.add_argument("--cache", metavar="FILE", help="response cache (default DIR/cache.sqlite)")
    p.add_argument(
        "--accept-partial",
        action="store_true",
        help="go on (exit 0; kbx run: evaluate and analyze) although some calls failed after "
        "their retries (default: exit 1; the same command again retries them)",
    )


def load_toml(path: str | None) -> dict[str, Any]:
    if not path:
        return {}
    try:
        return tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ValueError(f"{path}: no such configuration file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not TOML: {exc}") from None


def run_config(args: argparse.Namespace, device: str) -> RunConfig:
    """Flags over the environment over the TOML file over the preset; ValueError names the key."""
    data = load_toml(args.config)
    model, method = preset(args.method, args.samples or 1)
    client: dict[str, Any] = {"model": model, **data.get("client", {})}
    if url := args.base_url or os.environ.get("OPENAI_BASE_URL"):
        client["base_url"] = url
    if chosen := args.model:
        client["model"] = chosen
    method_data = {**method.model_dump(), **data.get("method", {})}
    if args.samples:
        method_data["samples"] = args.samples
    prices = data.get("prices", {})
    try:
        return RunConfig(
            method=method_data,  # type: ignore[arg-type]
            client=ClientConfig(**client),
            device=device,
            tasks=args.tasks,
            prices={k: Price(**v) for k, v in prices.items()},
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = f"{args.config}: " if args.config else ""
        key = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"{where}key {key!r}: {first['msg']}") from None


def cmd_generate(args: argparse.Namespace) -> int:
    return guarded(args, evaluate_final=False)


def cmd_run(args: argparse.Namespace) -> int:
    return guarded(args, evaluate_final=True)


def guarded(args: argparse.Namespace, evaluate_final: bool) -> int:
    try:
        return start(args, evaluate_final)
    except ModuleNotFoundError as exc:
        if exc.name not in EXTRA:
            raise
        return fail(f"kbx {args.command} needs {exc.name}: pip install 'kernelbench-x[generate]'")
    except KeyboardInterrupt:
        from kbx.commands.runcmds import interrupted

        hint = (
            f"interrupted: replies so far are cached in {args.out}; run the same command again "
            "to resume"
        )
        code = interrupted(Path(args.out), True, wait_s=INTERRUPT_WAIT_S, hint=hint)
        if any(t.is_alive() for t in threading.enumerate() if t is not threading.main_thread()):
            # a job thread started by the judge's daemon thread is a daemon too, yet the
            # interpreter's exit joins every pool worker: that wait is what hung a stopped run
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        return code


INTERRUPT_WAIT_S = 0.5  # after a Ctrl-C, what a thread still busy gets before the process ends
NO_ENDPOINT = (
    "no endpoint: give --base-url URL, set OPENAI_BASE_URL, or [client] base_url in --config "
    "(docs/design/generate.md has vLLM, SGLang, DeepSeek and OpenRouter)"
)


def start(args: argparse.Namespace, evaluate_final: bool) -> int:
    from kbx.gpu.hardware import default_device, device_problem
    from kbx.run.evaluator import Evaluator
    from kbx.suite import select

    device = args.device or default_device()
    if problem := device_problem(device) or tasks_problem(args.tasks):
        return fail(problem)
    if args.samples and args.method in ("geak", "kernelagent"):
        return fail(f"--samples is for the one-shot presets, not {args.method}")
    try:
        run = run_config(args, device)
    except ValueError as exc:
        return fail(str(exc))
    out = Path(args.out)
    if problem := endpoint_problem(run, args, out):
        return fail(problem)
    ev = Evaluator(device, run_dir=out / "loop")
    try:
        manifest = generate_with_progress(run, out, select(args.tasks), ev, args)
    except BaseException:
        close_soon(ev)  # a Ctrl-C: its children killed, queued candidates dropped
        raise
    ev.close()
    final = Path(manifest["rounds"][-1])
    failed = print_calls(manifest, run)
    console.print(f"{run.method.preset}: {len(manifest['tasks'])} tasks; outputs in {out}")
    if failed and not args.accept_partial:
        return fail(
            f"{failed} calls failed after their retries (the table above): run the same command "
            "again to retry them, the replies so far are cached; --accept-partial goes on",
            code=1,
        )
    if evaluate_final:
        return evaluate_and_analyze(final, out, device, manifest, args.bootstrap, run)
    return 0


def close_soon(ev: Any) -> None:
    """Close the Evaluator after a Ctrl-C, waiting at most CLOSE_S: a job thread that had not
    yet forked its candidate's child (the fork server still starting) would hold the close for
    seconds.  Past that, this process's children (fork servers and their process groups) are
    killed, and what is left ends with the process (``runcmds.interrupted``)."""
    closer = threading.Thread(target=ev.close, kwargs={"cancel": True}, daemon=True)
    closer.start()
    closer.join(CLOSE_S)
    if closer.is_alive():  # a fork server still starting ends only once it is ready: kill it
        from kbx.run.cancel import parents

        me = os.getpid()
        for pid in [p for p, parent in parents().items() if parent == me]:
            for kill in (os.killpg, os.kill):  # each leads a session of its own, or not yet
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    kill(pid, signal.SIGKILL)


CLOSE_S = 1.0


def endpoint_problem(run: RunConfig, args: argparse.Namespace, out: Path) -> str | None:
    """Why the run's endpoint cannot serve it (none given, dead, key refused, model unknown),
    or None.  A resumed run whose cache holds replies goes on without the endpoint, saying so:
    a finished run replays with no network, and calls still missing fail and are counted."""
    from kbx.generate.probe import probe

    if run.client.base_url is None:
        return NO_ENDPOINT
    problem = asyncio.run(probe(run.client, os.environ.get(args.api_key_env)))
    cache = Path(args.cache) if args.cache else out / "cache.sqlite"
    if problem and cache.exists():
        console.print(Text(f"{problem}; going on with the replies in {cache}", style="yellow"))
        return None
    return problem


def print_calls(manifest: dict[str, Any], run: RunConfig) -> int:
    """The calls, tokens and cost in a line, and a table of the tasks whose calls failed after
    their retries; returns how many calls failed."""
    total, tasks = manifest["cost"]["total"], manifest["cost"]["tasks"]
    console.print(
        f"{total['calls']} calls ({total['cached_calls']} from the cache, {total['failed_calls']} "
        f"failed), {total['tokens_in'] + total['tokens_out']} tokens, "
        f"{money(run, total['usd'])}",
        highlight=False,
        markup=False,
    )
    failed = {t: c for t, c in tasks.items() if c["failed_calls"]}
    if failed:
        table = RichTable(title="calls that failed after their retries")
        for col in ("task", "calls", "failed", "last error"):
            table.add_column(col, overflow="fold")
        for task, cost in failed.items():
            why = manifest["errors"].get(task, "")
            table.add_row(task, str(cost["calls"]), str(cost["failed_calls"]), why)
        console.print(table)
    return int(total["failed_calls"])


def money(run: RunConfig, usd: float) -> str:
    """Dollars, or "unpriced" where no price is configured for the model (never $0)."""
    if run.client.model in run.prices or "*" in run.prices:
        return f"${usd:.4f}"
    return "unpriced (no [prices] for the model in --config)"


def generate_with_progress(
    run: RunConfig, out: Path, tasks: list[Any], ev: Any, args: argparse.Namespace
) -> dict[str, Any]:
    from kbx.generate.judge import through
    from kbx.generate.runner import Plan, generate

    plan = Plan(
        run, out, tasks, through(ev), os.environ.get(args.api_key_env),
        Path(args.cache) if args.cache else None,
    )  # fmt: skip
    with progress_bar() as bar:
        progress = bar.add_task(run.method.preset, total=len(tasks), last="")
        return asyncio.run(
            generate(
                plan,
                on_step=lambda task, what: bar.update(progress, last=f"{task}: {what}"),
                on_done=lambda task, what: bar.update(progress, advance=1, last=f"{task}: {what}"),
            )
        )


def evaluate_and_analyze(
    final: Path,
    out: Path,
    device: str,
    manifest: dict[str, Any],
    bootstrap: int,
    run: RunConfig,
) -> int:
    """A fresh kbx evaluation of the final round, the analysis, and the cost per solved task."""
    from kbx.commands.runcmds import run_with_progress
    from kbx.run.evaluator import Evaluator

    with Evaluator(device, run_dir=out / "eval") as ev:
        run_with_progress(final, out / "eval", ev, None)
    records = [json.loads(x) for x in (out / "eval" / "results.jsonl").read_text().splitlines()]
    solved = sum(r["verdict"] == "passed" for r in records)
    total = manifest["cost"]["total"]
    priced = not money(run, 0.0).startswith("unpriced")
    manifest["final"] = {
        "round_file": str(final),
        "solved": solved,
        "tasks": len(records),
        "usd_per_solved": total["usd"] / solved if solved and priced else None,
        "tokens_per_solved": (total["tokens_in"] + total["tokens_out"]) / solved
        if solved
        else None,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
    console.print(
        f"solved {solved}/{len(records)}; {money(run, total['usd'])} and "
        f"{total['tokens_in'] + total['tokens_out']} tokens in all",
        highlight=False,
        markup=False,
    )
    try:
        from kbx.analyze.command import analyze
    except ModuleNotFoundError as exc:
        return fail(f"the analysis needs {exc.name}: pip install 'kernelbench-x[analysis]'")
    analyze([out / "eval"], out / "analysis", bootstrap, 0, console)
    return 0
