"""The one driver of kbx's published figures: each step measures one figure on this machine's
device, writes its current file (``evidence.write``; ``<gpu>`` is the device's model, ``cpu`` on
the CPU) and prints one summary line; the results table is made again from the files.

    python benchmarks/gpu.py reference corpora:300 validate --out $OUT --budget 570
    python benchmarks/gpu.py --table            # benchmarks/results/README.md from the files
    python benchmarks/gpu.py reference:1800 --device cpu --busy 2   # beside two busy loops

``STEP:SECONDS`` sets a step's limit (each within 10 minutes); a step is skipped when the
budget left is under a minute. Steps and files:

- ``reference``: ``kbx eval solutions/reference`` with default settings in a fresh run folder
  and empty caches (a fresh machine's: kbx's baselines, inductor's and Triton's kernels)
  (reference-<gpu>.json, its records in reference-<gpu>.jsonl); ``reference-jobs16``,
  ``reference-cap22`` (the GPU memory budget capped at 22 GB) and ``reference-noperf``
  (correctness only, ``jobs = 16``) are its variants;
- ``corpora``: the exploit and known-bad corpora beside honest reference solutions, each
  candidate against its expected verdict (corpora-<gpu>.json);
- ``faults``: the GPU faults of tests/gpu_faults beside reference solutions (faults-<gpu>.json);
- ``validate``: ``kbx validate`` over the suite (validate-<gpu>.json);
- ``throughput``: ``benchmarks/throughput.py fresh cached``, new candidates (every kernel
  compiled) then the same again (every kernel cached), correctness only, with kbx's defaults
  (throughput-<gpu>.json); ``throughput-rl`` (GRPO groups of 16 variants of 24 tasks),
  ``throughput-standard`` (``fresh`` timed) and ``throughput-serve`` (``fresh`` through ``kbx
  serve``) are its variants, each in a file of its own;
- ``serve``: ``kbx serve`` under ``benchmarks/serve_load.py`` (serve-<gpu>.json);
- ``clients``: ``kbx run --method geak`` and the Ray backend (``scripts/gpu_clients.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
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
import runlogs  # noqa: E402
from throughput import cpu_shares, jiffies  # noqa: E402

ROOT = evidence.ROOT
PY = sys.executable
EXPECT = re.compile(r"Expect: ([a-z_]+)\b")
EXPECT_CUDA = re.compile(r"Expect on cuda: ([a-z_]+(?: or [a-z_]+)*)\b")  # "a or b": either
# reference solutions evaluated beside the corpora and the faults: their verdicts must not change
NEIGHBOURS = (
    "Activation/relu Activation/gelu Activation/tanh Math/rsqrt Math/add Reduce/sum "
    "MatrixMultiply/matmul Loss/mse_loss Normalization/batch_norm Fusion/fused_add_gelu"
).split()
LIMITS = {"reference": 570, "corpora": 330, "faults": 200, "validate": 240, "throughput": 570}
LIMITS |= {"serve": 280, "clients": 300}
BUSY = 0  # busy loops the steps run beside (``--busy``)
REFERENCE_TARGET = "184/184 passed, first progress within 10 s, within 600 s"
THROUGHPUT = {  # benchmarks/throughput.py's sets and options, by step
    "throughput": ["fresh", "cached"],
    "throughput-rl": ["rl"],
    "throughput-standard": ["fresh", "--tier", "standard"],
    "throughput-serve": ["fresh", "--via", "serve"],
}
VARIANTS = {  # reference variants: (tuning TOML, kbx eval flags)
    "reference": ("", []),
    "reference-jobs16": ("jobs = 16\n", []),
    "reference-cap22": ("gpu_memory_gb = 22\n", []),
    "reference-noperf": ("jobs = 16\n", ["--no-perf"]),
}


class Run:
    """One command with a time limit: its output in a log, the seconds to its first line."""

    def __init__(self, cmd: list[str], limit_s: float, log: Path, env: dict[str, str]) -> None:
        self.cmd, self.log = cmd, log
        began = time.monotonic()
        self.first_line_s: float | None = None
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        timer = threading.Timer(limit_s, proc.kill)
        timer.start()
        with log.open("w") as out:
            assert proc.stdout is not None
            for line in proc.stdout:
                if self.first_line_s is None:
                    self.first_line_s = round(time.monotonic() - began, 2)
                out.write(line)
                out.flush()  # the log read live while the step runs
        self.code = proc.wait()
        timer.cancel()
        self.wall_s = round(time.monotonic() - began, 1)
        self.cut = self.code == -9

    @property
    def tracebacks(self) -> int:
        return self.log.read_text(errors="replace").count("Traceback (most recent call last)")


def env_for(device: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONUNBUFFERED="1")


# Where kbx, inductor and Triton keep what outlives a run: a reference step gets empty ones, so
# that each variant measures a fresh machine even after an earlier step warmed this one.
FRESH_CACHES = ("KBX_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")


def fresh_env(device: str, folder: Path) -> dict[str, str]:
    """``env_for`` with every cache that outlives a run in a new folder under ``folder``."""
    env = env_for(device)
    for name in FRESH_CACHES:
        (folder / name.lower()).mkdir(parents=True, exist_ok=True)
        env[name] = str(folder / name.lower())
    return env


def records(run_dir: Path) -> list[dict[str, Any]]:
    """A run folder's records, also of a run a time limit cut off (read from its store)."""
    from kbx.commands.report import NoResults, load_records

    try:
        return list(load_records(run_dir))
    except NoResults:  # the run finished no candidate: its figures say so
        return []


def gpu_memory_sampler(device: str) -> tuple[threading.Event, list[int]]:
    """The GPU's used memory (MiB) each second until the event is set."""
    stop, seen = threading.Event(), []

    def sample() -> None:
        while not stop.wait(1.0):
            used = evidence.smi("memory.used")
            if used and used.isdigit():
                seen.append(int(used))

    if device == "cuda":
        threading.Thread(target=sample, daemon=True).start()
    return stop, seen


def reference(name: str, device: str, limit_s: float, work: Path, out: Path) -> str:
    tuning, flags = VARIANTS[name]
    run_dir = work / name
    cmd = [PY, "-m", "kbx", "eval", "solutions/reference", "--device", device]
    cmd += ["--out", str(run_dir), *flags]
    if tuning:
        (work / f"{name}.toml").write_text(tuning)
        cmd += ["--config", str(work / f"{name}.toml")]
    stop, memory = gpu_memory_sampler(device)
    before = jiffies()
    run = Run(cmd, limit_s, work / f"{name}.log", fresh_env(device, work / f"{name}-caches"))
    cores_busy = cpu_shares(before, jiffies())["busy"]
    stop.set()
    got = records(run_dir)
    verdicts = Counter(r["verdict"] for r in got)
    rejected = [
        {"task": r["task_id"], "verdict": r["verdict"], "detail": r["detail"][:240]}
        for r in got
        if r["verdict"] != "passed"
    ]
    title, target = f"the reference solutions ({name})", REFERENCE_TARGET
    if device == "cpu" and BUSY:  # issue 46's check: the trust checks reject nothing honest
        title += f" on the CPU beside {BUSY} busy loops"
        target = f"184/184 passed beside {BUSY} busy loops, on the development machine"
    figures = {
        "title": title,
        "target": target,
        "summary": f"{verdicts['passed']}/184 passed in {run.wall_s} s"
        + (" (cut off)" if run.cut else ""),
        "passed": verdicts["passed"],
        "done": len(got),
        "verdicts": dict(verdicts),
        "false_rejections": rejected,
        "wall_s": run.wall_s,
        "first_output_s": run.first_line_s,
        "cut": run.cut,
        "exit": run.code,
        "tracebacks_on_terminal": run.tracebacks,
        "caches": "fresh: " + ", ".join(FRESH_CACHES) + " empty at the start",
        "tuning": (tuning.strip() or "defaults")
        + (f", beside {BUSY} busy loops (benchmarks/gpu.py --busy {BUSY})" if BUSY else ""),
        "gpu_memory_used_max_mib": max(memory) if memory else None,
        "cores_busy_share": cores_busy,  # every process's, over the run
        "baselines_stage": runlogs.stage(run_dir, os.cpu_count() or 1),
        "gpu_lock": runlogs.lock(run_dir),
        "gpu_memory": runlogs.memory(run_dir),
    }
    if run.cut or rejected or run.code:  # what the terminal said last, for the figure's reader
        figures["console_tail"] = run.log.read_text(errors="replace")[-4000:]
    shown = " ".join(c if " " not in c else repr(c) for c in cmd[1:])
    slug = evidence.slug(device)
    with (out / f"{name}-{slug}.jsonl").open("w") as f:
        f.writelines(json.dumps(r) + "\n" for r in got)
    evidence.write(out, f"{name}-{slug}.json", figures, device, f"python {shown}")
    return figures["summary"]


def expected(path: Path, device: str) -> str:
    """The verdict a corpus file must get: its docstring's ``Expect`` (``Expect on cuda``), its
    folder's name in tests/bad, tests/gpu_bad and tests/gpu_faults, ``passed`` for a solution."""
    rel = path.relative_to(ROOT)
    if rel.parts[0] == "solutions":
        return "passed"
    if rel.parts[1] in ("exploits", "exploits_gpu"):
        doc = path.read_text().split('"""')[1]
        found = (EXPECT_CUDA.search(doc) if device == "cuda" else None) or EXPECT.search(doc)
        return found.group(1) if found else "?"
    return rel.parts[2]


def corpus_run(
    name: str, sources: list[Path], device: str, limit_s: float, timeout_s: int, work: Path
) -> tuple[list[dict[str, Any]], Run]:
    """``kbx eval`` of a folder holding links to ``sources``; each record against its file's
    expected verdict."""
    folder = work / name / "corpus"
    origin = {}
    for src in sources:
        rel = src.relative_to(ROOT)
        dest = folder / "_".join(rel.parts[:-2]) / rel.parts[-2] / rel.parts[-1]
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(src.read_text())
        origin[str(dest.resolve())] = src
    cmd = [PY, "-m", "kbx", "eval", str(folder), "--device", device, "--out", str(work / name)]
    cmd += ["--timeout-s", str(timeout_s)]
    run = Run(cmd, limit_s, work / f"{name}.log", env_for(device))
    rows = []
    for r in records(work / name):
        src = origin.get(str(Path(r["source"].split(":", 1)[0]).resolve()))
        want = expected(src, device) if src else "?"
        rel = str(src.relative_to(ROOT)) if src else r["source"]
        ok = r["verdict"] in want.split(" or ")
        rows.append({"file": rel, "expected": want, "verdict": r["verdict"], "ok": ok})
        rows[-1]["detail"] = r["detail"][:200]
    return rows, run


def corpus_files(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py") if "__" not in p.name)


def neighbours() -> list[Path]:
    return [ROOT / "solutions" / "reference" / f"{t}.py" for t in NEIGHBOURS]


def corpora(device: str, limit_s: float, work: Path, out: Path) -> str:
    """The corpora, the candidates that wait on the wall-clock backstop apart at 5 s limits."""
    folders = ["tests/exploits", "tests/bad"] + (
        ["tests/exploits_gpu", "tests/gpu_bad"] if device == "cuda" else []
    )
    files = corpus_files(*folders)
    sleepers = [p for p in files if "wall-clock backstop" in p.read_text()]
    began = time.monotonic()
    rows, run = corpus_run(
        "corpora",
        [p for p in files if p not in sleepers] + neighbours(),
        device,
        limit_s - 100,
        30,
        work,
    )
    left = limit_s - (time.monotonic() - began)
    more, _ = corpus_run("sleepers", sleepers, device, left, 5, work) if sleepers else ([], run)
    return report_corpus("corpora", rows + more, len(files) + len(NEIGHBOURS), run, device, out)


def faults(device: str, limit_s: float, work: Path, out: Path) -> str:
    files = corpus_files("tests/gpu_faults") + neighbours()
    rows, run = corpus_run("faults", files, device, limit_s, 10, work)
    return report_corpus("faults", rows, len(files), run, device, out)


def report_corpus(
    name: str, rows: list[dict[str, Any]], total: int, run: Run, device: str, out: Path
) -> str:
    good = sum(r["ok"] for r in rows)
    hostile_passed = [
        r["file"] for r in rows if r["verdict"] == "passed" and r["expected"] != "passed"
    ]
    figures = {
        "title": f"the {name}: each candidate its expected verdict",
        "target": f"{total}/{total}, no hostile candidate passed, honest neighbours passed",
        "summary": f"{good}/{total} their expected verdict",
        "expected_met": good,
        "candidates": total,
        "judged": len(rows),
        "hostile_passed": hostile_passed,
        "wrong": [r for r in rows if not r["ok"]],
        "wall_s": run.wall_s,
        "rows": rows,
    }
    cmd = f"python benchmarks/gpu.py {name}"
    evidence.write(out, f"{name}-{evidence.slug(device)}.json", figures, device, cmd)
    return figures["summary"]


def validate(device: str, limit_s: float, work: Path, out: Path) -> str:
    found = work / "validate.json"
    cmd = [PY, "-m", "kbx", "validate", "--device", device, "--json", str(found)]
    run = Run(cmd, limit_s, work / "validate.log", env_for(device))
    report = json.loads(found.read_text()) if found.exists() else []
    tasks = report if isinstance(report, list) else []
    sound = sum(1 for t in tasks if t.get("ok"))
    figures = {
        "title": "kbx validate: the suite's self-test",
        "target": "184/184 sound",
        "summary": f"{sound}/184 sound in {run.wall_s} s",
        "sound": sound,
        "tasks": len(tasks),
        "wall_s": run.wall_s,
        "unsound": [t for t in tasks if not t.get("ok")],
    }
    cmd_text = f"python -m kbx validate --device {device}"
    evidence.write(out, f"validate-{evidence.slug(device)}.json", figures, device, cmd_text)
    return figures["summary"]


def script(name: str, args: list[str], device: str, limit_s: float, work: Path, out: Path) -> str:
    """A benchmark that writes its own figures (``--out``): they go into its current file."""
    found = work / f"{name}.json"
    run = Run([PY, *args, "--out", str(found)], limit_s, work / f"{name}.log", env_for(device))
    figures = (
        json.loads(found.read_text()) if found.exists() else {"error": run.log.read_text()[-600:]}
    )
    figures.setdefault("summary", f"exit {run.code} after {run.wall_s} s")
    figures["wall_s"] = run.wall_s
    evidence.write(
        out, f"{name}-{evidence.slug(device)}.json", figures, device, f"python {' '.join(args)}"
    )
    return str(figures["summary"])


SMOKE = "Activation/relu,Math/add,Index/index_fill_,Quantization/matmul_w8a8"


def smoke(device: str, work: Path) -> str | None:
    """A few tasks in a run folder and a baseline cache of their own (the steps after it still
    find a fresh machine): what failed, or None. A call that would fail in every step stops in a
    minute instead."""
    env = env_for(device) | {"KBX_CACHE_DIR": str(work / "smoke-cache")}
    cmd = [PY, "-m", "kbx", "eval", "solutions/reference", "--tasks", SMOKE, "--device", device]
    run = Run([*cmd, "--out", str(work / "smoke")], 240, work / "smoke.log", env)
    got = records(work / "smoke")
    bad = [
        f"{r['task_id']} {r['verdict']}: {r['detail'][:160]}"
        for r in got
        if r["verdict"] != "passed"
    ]
    if run.code not in (0,) or bad or len(got) != len(SMOKE.split(",")):
        tail = run.log.read_text(errors="replace")[-800:]
        return f"exit {run.code}, {len(got)} done, {bad or 'no failure recorded'}; log: {tail}"
    print(f"smoke: {len(got)}/{len(got)} passed in {run.wall_s} s", flush=True)
    return None


def run_step(name: str, device: str, limit_s: float, work: Path, out: Path) -> str:
    if name in VARIANTS:
        return reference(name, device, limit_s, work, out)
    if name in ("corpora", "faults", "validate"):
        return {"corpora": corpora, "faults": faults, "validate": validate}[name](
            device, limit_s, work, out
        )
    if name in THROUGHPUT:  # the sets end by the step's limit, less the figures' writing
        sets = ["benchmarks/throughput.py", *THROUGHPUT[name], "--end-s", str(int(limit_s) - 30)]
        return script(name, sets, device, limit_s, work, out)
    args = {
        "serve": [
            "benchmarks/serve_load.py",
            "--device",
            device,
            "--submissions",
            "1000",
            "--per-tier",
            "32",
            "--end-s",
            str(int(limit_s) - 20),
        ],
        "clients": ["scripts/gpu_clients.py", "generate", "ray", "--device", device],
    }[name]
    return script(name, args, device, limit_s, work, out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("steps", nargs="*", help="STEP or STEP:SECONDS")
    p.add_argument("--device", choices=("cuda", "cpu"), default=None)
    p.add_argument("--out", type=Path, default=evidence.RESULTS, help="where the files go")
    p.add_argument("--budget", type=float, default=570.0, help="seconds for all the steps")
    p.add_argument("--table", action="store_true", help="remake the results table and exit")
    p.add_argument(
        "--smoke", action="store_true", help="first a few tasks apart; stop if any fails"
    )
    p.add_argument(
        "--busy", type=int, default=0, help="run the steps beside this many busy loops (a CPU each)"
    )
    args = p.parse_args()
    if args.table:
        evidence.refresh_table()
        return 0
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    began, work = time.monotonic(), Path(tempfile.mkdtemp(prefix="kbx-figures-"))
    if args.smoke and (problem := smoke(device, work)):
        print(f"smoke: {problem}; no step run", flush=True)
        return 3
    global BUSY
    BUSY = args.busy
    loops = [
        subprocess.Popen([PY, "-c", "while True: pass"], start_new_session=True)
        for _ in range(args.busy)
    ]
    try:
        steps(args, device, began, work)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    if args.out.resolve() == evidence.RESULTS.resolve():
        evidence.refresh_table()
    return 0


def steps(args: argparse.Namespace, device: str, began: float, work: Path) -> None:
    for step in args.steps:
        name, _, seconds = step.partition(":")
        left = args.budget - (time.monotonic() - began)
        limit = min(float(seconds or LIMITS.get(name.split("-")[0], 300)), left - 20)
        if limit < 60:
            print(f"{name}: skipped, {left:.0f} s left", flush=True)
            continue
        print(f"{name}: {run_step(name, device, limit, work, args.out)}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
