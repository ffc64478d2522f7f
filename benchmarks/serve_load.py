"""Load on ``kbx serve`` over loopback: concurrent clients, a SIGKILL and restart in the middle,
and the check that nothing accepted was lost or answered twice.

A benchmark, not a test: it prints figures (and writes them as JSON with --out).
    .venv/bin/python benchmarks/serve_load.py --device cpu
    .venv/bin/python benchmarks/serve_load.py --device cuda --per-tier 184   # on a GPU host

``--clients`` threads submit batches of 1 to 4 candidates drawn from a pool of ``--distinct``
candidates (honest: the reference solutions of cheap tasks, each made distinct by a comment;
failing: tests/bad; hostile: tests/exploits that end fast), until ``--submissions`` are in; each
client streams its batch's results.  A candidate drawn again is a duplicate, answered from the
cache (or by its twin's evaluation).  Once half the submissions are in, the server is killed with
SIGKILL and started again over the same state.  Latency is the client's, from its POST to the
result on its stream.  ``--per-tier N`` then times N fresh reference solutions in the quick and
the standard tier, as evaluations per GPU-hour (per CPU-hour on the CPU, where nothing is timed);
``--end-s`` bounds the whole run, a tier cut off by it being figured over what it finished.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kbx.client import Client, Retry  # noqa: E402
from kbx.serve.queue import Queue  # noqa: E402
from tests.serve.live import Server  # noqa: E402

HONEST_TASKS = ("relu", "leaky_relu", "gelu", "selu", "relu_fp16", "gelu_fp16")
FAILING = (
    "mismatch",
    "runtime_error",
    "import_failed",
    "no_triton",
    "wrong_shape",
    "compile_failed",
)
HOSTILE = (
    "kill_parent", "kill_forkserver", "kill_group", "kill_siblings", "forge_channel", "network",
    "abort", "native_code", "constant", "identity", "mutate_inputs", "close_fds",
)  # fmt: skip
RETRY = Retry(retries=10, backoff_s=0.25)  # rides out a restart (about 5 s)


def corpus(folder: Path, classes: tuple[str, ...], kind: str) -> list[dict[str, Any]]:
    """Each ``<class>/<Category>/<name>.py`` below ``folder`` as a candidate of ``kind``."""
    found = []
    for cls in classes:
        for path in sorted((folder / cls).glob("*/*.py")):
            task = f"{path.parent.name}/{path.stem}"
            found.append({"task_id": task, "code": path.read_text(), "kind": kind})
    return found


def pool(distinct: int, seed: int) -> list[dict[str, Any]]:
    """Up to ``distinct`` candidates: a quarter failing and a quarter hostile (as many as the
    corpora hold: 15 and 14), the rest honest."""
    reference = ROOT / "solutions" / "reference" / "Activation"
    honest = []
    for i in range(distinct):
        for task in HONEST_TASKS:
            code = f"{(reference / f'{task}.py').read_text()}\n# {i}\n"
            honest.append({"task_id": f"Activation/{task}", "code": code, "kind": "honest"})
    failing = corpus(ROOT / "tests" / "bad", FAILING, "failing")
    hostile = corpus(ROOT / "tests" / "exploits", HOSTILE, "hostile")
    quarter = max(1, distinct // 4)
    rng = random.Random(seed)
    chosen = honest[: distinct - 2 * quarter] + rng.sample(failing, min(quarter, len(failing)))
    return chosen + rng.sample(hostile, min(quarter, len(hostile)))


class Load:
    """The clients' shared state: what was submitted, accepted and received."""

    def __init__(self, url: str, candidates: list[dict[str, Any]], total: int, tier: str) -> None:
        self.url, self.candidates, self.total, self.tier = url, candidates, total, tier
        self.lock = threading.Lock()
        self.submitted = 0
        self.accepted: dict[str, str] = {}  # job id -> kind
        self.received: Counter[str] = Counter()
        self.latency: dict[str, list[float]] = {"fresh": [], "cached": []}
        self.verdicts: Counter[str] = Counter()
        self.errors: list[str] = []

    def status(self) -> str:
        """Where the load stands, for the log of a run cut off by a time limit."""
        with self.lock:
            got = sum(self.received.values())
            return f"{self.submitted} submitted, {len(self.accepted)} accepted, {got} answered"

    def take(self, rng: random.Random) -> list[dict[str, Any]]:
        with self.lock:
            n = min(rng.randint(1, 4), self.total - self.submitted)
            self.submitted += n
        return [rng.choice(self.candidates) for _ in range(n)]

    def client(self, seed: int) -> None:
        rng = random.Random(seed)
        with Client(self.url, retry=RETRY, timeout_s=120) as http:
            while batch := self.take(rng):
                try:
                    self.one_batch(http, batch)
                except Exception as exc:  # noqa: BLE001  (reported and failed below)
                    self.errors.append(f"{type(exc).__name__}: {exc}")

    def one_batch(self, http: Client, batch: list[dict[str, Any]]) -> None:
        began = time.monotonic()
        items = [{"task_id": c["task_id"], "code": c["code"], "tier": self.tier} for c in batch]
        accepted = http.submit(items)
        with self.lock:
            self.accepted.update(zip(accepted["ids"], (c["kind"] for c in batch), strict=True))
        for job in http.stream(accepted["batch_id"]):
            took = time.monotonic() - began
            with self.lock:
                self.received[job["id"]] += 1
                self.latency["cached" if job["cached"] else "fresh"].append(took)
                self.verdicts[job["result"]["verdict"]] += 1


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def run_load(server: Server, args: argparse.Namespace) -> dict[str, Any]:
    load = Load(server.url, pool(args.distinct, args.seed), args.submissions, "quick")
    threads = [
        threading.Thread(target=load.client, args=(args.seed + i,)) for i in range(args.clients)
    ]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    while load.submitted < args.submissions // 2:
        time.sleep(0.05)
        if time.monotonic() - began > args.time_limit_s:
            raise SystemExit(f"half the submissions not in after --time-limit-s: {load.status()}")
    print(f"kill at {time.monotonic() - began:.1f} s: {load.status()}", file=sys.stderr)
    server.kill()
    killed = time.monotonic()
    server.start()
    downtime_s = time.monotonic() - killed
    for thread in threads:
        thread.join(max(1.0, args.time_limit_s - (time.monotonic() - began)))
    wall_s = time.monotonic() - began
    if any(t.is_alive() for t in threads):
        raise SystemExit(f"the load ran past --time-limit-s {args.time_limit_s}: {load.status()}")
    print(f"load done in {wall_s:.1f} s: {load.status()}", file=sys.stderr)
    return check(server, load, wall_s, downtime_s)


def check(server: Server, load: Load, wall_s: float, downtime_s: float) -> dict[str, Any]:
    """The figures, once nothing lost and nothing answered twice is asserted."""
    queue = Queue(server.state / "queue.sqlite")
    answers = queue.answers()
    rerun = queue.connection().execute("SELECT count(*) FROM jobs WHERE attempts > 1").fetchone()
    lost = [i for i in load.accepted if load.received[i] == 0]
    twice = [i for i, n in answers.items() if n != 1]
    assert not load.errors, f"{len(load.errors)} client errors, the first: {load.errors[0]}"
    assert not lost, f"{len(lost)} accepted jobs never answered, e.g. {lost[:3]}"
    assert not twice, f"{len(twice)} jobs answered other than once, e.g. {twice[:3]}"
    assert set(answers) == set(load.accepted), "the server holds jobs no client was given"
    assert sum(load.received.values()) == len(load.accepted)
    fresh, cached = load.latency["fresh"], load.latency["cached"]
    return {
        "submissions": len(load.accepted),
        "wall_s": round(wall_s, 1),
        "throughput_per_s": round(len(load.accepted) / wall_s, 1),
        "restart_downtime_s": round(downtime_s, 1),
        "run_again_after_the_kill": rerun[0],
        "fresh": len(fresh),
        "cached": len(cached),
        "latency_s": {
            name: {"p50": rnd(percentile(xs, 50)), "p99": rnd(percentile(xs, 99))}
            for name, xs in (("fresh", fresh), ("cached", cached))
        },
        "kinds": dict(Counter(load.accepted.values())),
        "verdicts": dict(load.verdicts),
    }


def rnd(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def per_tier(server: Server, count: int, tier: str, deadline: float) -> dict[str, Any]:
    """``count`` fresh reference solutions (the suite's, in turn) in ``tier``, submitted at once:
    evaluations per device-hour of this one-device server, over those finished by ``deadline``
    (``time.monotonic``; the figures say ``cut`` if some were not)."""
    solutions = sorted((ROOT / "solutions" / "reference").glob("*/*.py"))
    stamp = time.time_ns()
    items = []
    for i in range(count):
        path = solutions[i % len(solutions)]
        code = f"{path.read_text()}\n# {stamp} {i}\n"
        items.append({"task_id": f"{path.parent.name}/{path.stem}", "code": code})
    began = time.monotonic()
    print(f"{tier} tier: {count} fresh reference solutions", file=sys.stderr)
    verdicts: Counter[str] = Counter()
    counted = threading.Lock()
    http = Client(server.url, retry=RETRY, timeout_s=600)

    def follow(batch_id: str) -> None:
        for job in http.stream(batch_id):
            with counted:
                verdicts[job["result"]["verdict"]] += 1

    batches = [http.submit(items[i : i + 64], tier=tier) for i in range(0, count, 64)]
    # daemons: a cut tier's streams are left behind, and end with the process
    followers = [
        threading.Thread(target=follow, args=(b["batch_id"],), daemon=True) for b in batches
    ]
    for thread in followers:
        thread.start()
    for thread in followers:
        thread.join(max(0.0, deadline - time.monotonic()))
    if not any(thread.is_alive() for thread in followers):
        http.close()
    wall_s = time.monotonic() - began
    with counted:
        done, passed = sum(verdicts.values()), verdicts["passed"]
    figures = {
        "tier": tier,
        "evaluations": done,
        "passed": passed,
        "per_device_hour": round(done / wall_s * 3600),
        "wall_s": round(wall_s, 1),
        "cut": done < count,  # the deadline came first: the figure is over the first ``done``
    }
    print(json.dumps(figures), file=sys.stderr)  # kept by a run a time limit cuts off later
    return figures


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--submissions", type=int, default=2000)
    p.add_argument("--distinct", type=int, default=40, help="candidates the draws come from")
    p.add_argument("--time-limit-s", type=float, default=600.0)
    p.add_argument("--per-tier", type=int, default=0, metavar="N", help="then N fresh per tier")
    p.add_argument(
        "--end-s",
        type=float,
        default=None,
        help="seconds from the start by which the tiers end: of the time the load leaves, the "
        "quick tier gets at most half, the standard tier the rest (a tier cut off reports over "
        "the evaluations it finished); default: no limit",
    )
    p.add_argument("--state", default="runs/serve-load", help="the server's state (wiped first)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="also write the figures to this JSON file")
    args = p.parse_args()
    started = time.monotonic()
    state = Path(args.state).resolve()
    if (state / "queue.sqlite").exists():
        for name in ("queue.sqlite", "queue.sqlite-wal", "queue.sqlite-shm"):
            (state / name).unlink(missing_ok=True)
    state.parent.mkdir(parents=True, exist_ok=True)
    server = Server(state, ["--max-queue", "100000"], device=args.device).start()
    figures: dict[str, Any] = {"device": args.device}
    graceful = False  # a cut tier's evaluations would hold a graceful stop: killed instead
    try:
        figures["load"] = run_load(server, args)
        print(json.dumps(figures["load"]), file=sys.stderr)
        if args.per_tier:
            began = time.monotonic()
            budget = math.inf if args.end_s is None else max(0.0, args.end_s - (began - started))
            quick = per_tier(server, args.per_tier, "quick", began + budget / 2)
            standard = per_tier(server, args.per_tier, "standard", began + budget)
            figures["tiers"] = [quick, standard]
        print(json.dumps(figures, indent=1))
        if args.out:
            Path(args.out).write_text(json.dumps(figures, indent=1) + "\n")
        graceful = not any(tier["cut"] for tier in figures.get("tiers", []))
    finally:
        if graceful:
            server.stop()
        else:
            server.kill()


if __name__ == "__main__":
    main()
