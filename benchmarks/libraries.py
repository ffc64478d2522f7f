"""Libraries kbx could use against what it does by hand: the figures in docs/design/libraries.md.

A benchmark, not a test: it prints one block of figures per part, run on purpose.
    .venv/bin/python benchmarks/libraries.py [part ...]
Parts: forkserver, forkparts, sandbox, pool, lock, gmean, stats, pytree, proc, nvml (default:
all).  scipy, psutil and pynvml are not kbx dependencies: a part whose library is missing says
so and is skipped (``pip install --target DIR scipy psutil nvidia-ml-py``, then
``PYTHONPATH=DIR``).
Times are medians over repeats, and costs per call the best of 5 batches, unless a figure says
otherwise; the machine is shared, so read them as orders of magnitude.
"""

from __future__ import annotations

import contextlib
import json
import math
import multiprocessing as mp
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from decimal import Decimal, getcontext
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))


def show(name: str, **figures: Any) -> None:
    print(json.dumps({"part": name, **figures}), flush=True)


def ms(seconds: float) -> float:
    return round(seconds * 1e3, 3)


def us(seconds: float) -> float:
    return round(seconds * 1e6, 2)


def per_call(fn: Callable[[], Any], n: int) -> float:
    """Seconds per call of ``fn``, best of 5 batches of ``n``."""
    best = math.inf
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n)
    return best


def missing(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        show(name, skipped=f"{name} is not installed")
        return True
    return False


# --- fork server: request to a child that has torch and triton imported -------------------------

IMPORTED = "import os, torch, triton; os.write(1, b'x')"


def fresh_python(n: int) -> list[float]:
    """A fresh interpreter that imports torch and triton, until its first byte."""
    env = dict(os.environ, TRITON_INTERPRET="1")
    times = []
    for _ in range(n):
        t = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-c", IMPORTED], stdout=subprocess.PIPE, env=env)
        assert proc.stdout is not None and proc.stdout.read(1) == b"x"
        times.append(time.monotonic() - t)
        proc.wait()
        proc.stdout.close()
    return times


def mp_child(conn: Any) -> None:
    import torch  # noqa: F401 - preloaded by the server: already in sys.modules
    import triton  # noqa: F401

    conn.send_bytes(b"x")


def mp_forkserver(n: int) -> tuple[float, list[float]]:
    """``multiprocessing``'s forkserver, torch and triton preloaded: the first Process (which
    starts the server), then the time from ``start`` to the child's first message."""
    os.environ["TRITON_INTERPRET"] = "1"  # the server inherits this process's environment
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["__main__", "torch", "triton"])  # __main__: not re-run per child

    def one() -> float:
        r, w = ctx.Pipe(duplex=False)
        t = time.monotonic()
        proc = ctx.Process(target=mp_child, args=(w,))
        proc.start()
        r.recv_bytes()
        spent = time.monotonic() - t
        proc.join()
        w.close()
        r.close()
        return spent

    first = one()
    return first, [one() for _ in range(n)]


def kbx_job(folder: Path, fd: int) -> None:
    """A job for ``kbx.sandbox.child.main`` that names no task: the child opens it, isolates itself
    (namespaces), imports kbx's child side and the suite, and reports a harness error."""
    folder.mkdir()
    from kbx.sandbox.wire.job import ChildConfig, Job

    config = ChildConfig(device="cpu")
    job = Job(task_id="None/none", bench=(), msg_fd=fd, key="", confine=None, config=config)
    (folder / "job.json").write_text(job.model_dump_json())


def kbx_fresh(work: Path, n: int) -> list[float]:
    """A fresh ``python -m kbx.sandbox.child.main`` (the sandbox without a fork server), to its
    first message."""
    from kbx.sandbox.childenv import child_env
    from kbx.sandbox.wire.job import ChildConfig

    cfg = ChildConfig(device="cpu", timed=False)
    times = []
    for i in range(n):
        r, w = os.pipe()
        kbx_job(work / f"fresh{i}", w)
        t = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "kbx.sandbox.child.main", "job.json"],
            cwd=work / f"fresh{i}",
            env=child_env(work / f"fresh{i}", cfg),
            pass_fds=(w,),
            start_new_session=True,
        )
        os.close(w)
        assert os.read(r, 1)
        times.append(time.monotonic() - t)
        proc.wait()
        os.close(r)
    return times


def kbx_forkserver(work: Path, n: int) -> tuple[float, list[float]]:
    """kbx's fork server (one spare on the CPU): its start, then ``spawn`` to the first
    message of the same job as ``kbx_fresh``'s."""
    from kbx.sandbox.childenv import child_env, server_env
    from kbx.sandbox.servers import ForkServers
    from kbx.sandbox.wire.job import ChildConfig

    cfg = ChildConfig(device="cpu", timed=False)
    pool = ForkServers()
    try:
        t = time.monotonic()
        server = pool.server_for("cpu", server_env(cfg))
        started = time.monotonic() - t
        assert server is not None
        times = []
        for i in range(n):
            folder = work / f"forked{i}"
            r, w = os.pipe()
            kbx_job(folder, w)
            with open(folder / "out", "wb") as out, open(folder / "err", "wb") as err:
                t = time.monotonic()
                proc = server.spawn(
                    "job.json", str(folder), child_env(folder, cfg), [w, out.fileno(), err.fileno()]
                )
            os.close(w)
            assert os.read(r, 1)
            times.append(time.monotonic() - t)
            proc.wait(60)
            os.close(r)
            time.sleep(0.3)  # the server forks its spare again meanwhile, as between real jobs
        return started, times
    finally:
        pool.close()


def killed_child() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def mp_exit_code() -> tuple[int | None, bool]:
    """What ``multiprocessing`` reports for a child killed by SIGKILL, and whether ``join``
    with a timeout returns for one that hangs."""
    ctx = mp.get_context("forkserver")
    proc = ctx.Process(target=killed_child)
    proc.start()
    proc.join(30)
    hung = ctx.Process(target=time.sleep, args=(30,))
    hung.start()
    hung.join(0.2)
    timed_out = hung.exitcode is None
    hung.kill()
    hung.join()
    return proc.exitcode, timed_out


def forkserver_part() -> None:
    n = 5
    with tempfile.TemporaryDirectory(prefix="kbx-libs-") as tmp:
        work = Path(tmp)
        fresh = fresh_python(n)
        kfresh = kbx_fresh(work, n)
        mp_first, mp_times = mp_forkserver(n)
        exitcode, join_timeout = mp_exit_code()
        k_started, k_times = kbx_forkserver(work, n)
    show(
        "forkserver",
        unit="ms, request to the child's first message, median of 5",
        fresh_python_import_torch_triton=ms(statistics.median(fresh)),
        fresh_kbx_child=ms(statistics.median(kfresh)),
        mp_forkserver_first_process_with_server_start=ms(mp_first),
        mp_forkserver_process=ms(statistics.median(mp_times)),
        kbx_forkserver_start=ms(k_started),
        kbx_forkserver_child=ms(statistics.median(k_times)),
        kbx_forkserver_child_all=[ms(t) for t in k_times],
        mp_exitcode_of_sigkilled_child=exitcode,
        mp_join_timeout_returns=join_timeout,
    )


def forked_job(work: Path, channel_loaded: bool) -> dict[str, float]:
    """One child forked as the fork server forks one, timed in parts: the fork, ``isolate``
    (namespaces: two more forks), and ``child.main`` of the job up to its first message."""
    if channel_loaded:  # else the child imports it (``child.Channel``), as a forked one does
        import kbx.sandbox.wire.channel  # noqa: F401

    r, w = os.pipe()
    folder = work / f"parts{time.monotonic_ns()}"
    kbx_job(folder, w)
    os.chdir(folder)
    began = time.monotonic()
    pid = os.fork()
    if pid == 0:
        from kbx.sandbox import confine
        from kbx.sandbox.child import main

        forked = time.monotonic()
        layers = confine.isolate()
        isolated = time.monotonic()
        main.main("job.json", w, layers)
        os.write(
            w, json.dumps([forked - began, isolated - forked, time.monotonic() - isolated]).encode()
        )
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as messages:
        lines = messages.read().splitlines()
    os.waitpid(pid, 0)
    parts = json.loads(lines[-1].split("}")[-1])
    return {"fork_ms": ms(parts[0]), "isolate_ms": ms(parts[1]), "main_ms": ms(parts[2])}


def forkparts_part() -> None:
    """Where a forked child's time goes (in a process that imports what the server does)."""
    if "KBX_LIBRARIES_PART" not in os.environ:  # a process of its own, with nothing imported
        env = dict(os.environ, TRITON_INTERPRET="1", KBX_LIBRARIES_PART="1")
        subprocess.run([sys.executable, __file__, "forkparts"], env=env, check=True)
        return
    import torch  # noqa: F401
    import triton  # noqa: F401

    from kbx.sandbox.child import (
        runner,  # noqa: F401
    )
    from kbx.sandbox.child.forkserver import preload
    from kbx.suite import load_suite

    load_suite()
    preload("cpu")
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="kbx-libs-") as tmp:
        here = os.getcwd()
        try:
            for loaded in (False, True):
                runs = [forked_job(Path(tmp), loaded) for _ in range(5)]
                name = "channel_preloaded" if loaded else "as_the_server_preloads"
                figures[name] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        finally:
            os.chdir(here)
    show("forkparts", unit="ms, median of 5", **figures)


def sandbox_part() -> None:
    """``sandbox.run_child`` of a small candidate (Activation/relu's reference solution, on the
    CPU, untimed), in a fresh interpreter and forked by a fork server."""
    from kbx.sandbox.servers import ForkServers
    from kbx.sandbox.spawn import run_child
    from kbx.sandbox.wire.job import ChildConfig
    from kbx.suite import find

    task = find("Activation/relu")
    assert task is not None
    code = (ROOT / "solutions/reference/Activation/relu.py").read_text()
    cfg = ChildConfig(device="cpu", timed=False)
    figures = {}
    for name, servers in (("fresh", None), ("forked", ForkServers())):
        t = time.monotonic()
        run_child(task, code, cfg, servers)  # forked: includes the server's start
        first = time.monotonic() - t
        times = []
        for _ in range(4):
            t = time.monotonic()
            run = run_child(task, code, cfg, servers)
            times.append(time.monotonic() - t)
        if servers is not None:
            servers.close()
        figures[name] = {
            "first_s": round(first, 3),
            "median_s": round(statistics.median(times), 3),
            "setup_imports_s": run.stage_s.get("setup_imports"),
        }
    show("sandbox", candidate="solutions/reference/Activation/relu.py, CPU, untimed", **figures)


# --- compile pool against ProcessPoolExecutor ------------------------------------------------

ECHO = """
import json, os, signal, sys, time
for line in sys.stdin:
    req = json.loads(line)
    if req.get("crash"):
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(req.get("sleep", 0))
    sys.stdout.write("KBX-BASELINE " + json.dumps({"ok": {}}) + "\\n")
    sys.stdout.flush()
"""


def task(sleep: float = 0.0, crash: bool = False) -> int:
    if crash:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(sleep)
    return os.getpid()


def kbx_pool_figures(tasks: int) -> dict[str, Any]:
    from kbx.gpu import compile_pool

    pool = compile_pool.Pool([sys.executable, "-c", ECHO])
    env = dict(os.environ)
    try:
        t = time.monotonic()
        pool.ask("gpu0", env, {}, 30)
        first = time.monotonic() - t
        each = []
        for _ in range(tasks):
            t = time.monotonic()
            pool.ask("gpu0", env, {}, 30)
            each.append(time.monotonic() - t)
        # a crash: the other requests in flight are answered; the pool serves the next one
        outcomes: dict[str, str] = {}

        def ask(name: str, request: dict[str, Any]) -> None:
            try:
                pool.ask("gpu0", env, request, 30)
                outcomes[name] = "ok"
            except compile_pool.WorkerFailed as exc:
                outcomes[name] = f"WorkerFailed: {exc}"

        threads = [threading.Thread(target=ask, args=("crash", {"crash": True}))]
        threads += [
            threading.Thread(target=ask, args=(f"other{i}", {"sleep": 0.3})) for i in range(3)
        ]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        ask("after", {})
        # a timeout: the hung worker is killed; the next request goes to another
        try:
            pool.ask("gpu0", env, {"sleep": 5}, 0.3)
        except compile_pool.WorkerFailed as exc:
            outcomes["timed_out"] = f"WorkerFailed: {exc}"
        t = time.monotonic()
        pool.ask("gpu0", env, {}, 30)
        next_after_timeout = time.monotonic() - t
    finally:
        pool.close()
    return {
        "first_task_with_worker_start_ms": ms(first),
        "median_task_ms": ms(statistics.median(each)),
        "mean_task_ms_incl_recycling": ms(statistics.fmean(each)),
        "crash": outcomes,
        "next_task_after_a_timeout_ms": ms(next_after_timeout),
    }


def ppe_figures(tasks: int, method: str) -> dict[str, Any]:
    from concurrent.futures import ProcessPoolExecutor, TimeoutError, wait
    from concurrent.futures.process import BrokenProcessPool

    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(["__main__"])
    out: dict[str, Any] = {}
    with ProcessPoolExecutor(1, mp_context=ctx, max_tasks_per_child=24) as ex:
        t = time.monotonic()
        ex.submit(task).result()
        out["first_task_with_worker_start_ms"] = ms(time.monotonic() - t)
        each = []
        for _ in range(tasks):
            t = time.monotonic()
            ex.submit(task).result()
            each.append(time.monotonic() - t)
        out["median_task_ms"] = ms(statistics.median(each))
        out["mean_task_ms_incl_recycling"] = ms(statistics.fmean(each))
    # a crash in one worker: every pending future fails, and the executor takes no more
    with ProcessPoolExecutor(2, mp_context=ctx) as ex:
        futures = [ex.submit(task, crash=True)] + [ex.submit(task, 0.3) for _ in range(3)]
        wait(futures)
        failed = sum(isinstance(f.exception(), BrokenProcessPool) for f in futures)
        out["crash_futures_failed"] = f"{failed} of {len(futures)}"
        try:
            ex.submit(task)
            out["crash_then_submit"] = "accepted"
        except BrokenProcessPool as exc:
            out["crash_then_submit"] = f"BrokenProcessPool: {exc}"
    # a timeout: result(timeout) gives up waiting, but the task keeps its worker busy
    with ProcessPoolExecutor(1, mp_context=ctx) as ex:
        ex.submit(task).result()  # the worker started
        slow = ex.submit(task, 3.0)
        with contextlib.suppress(TimeoutError):
            slow.result(timeout=0.3)
        out["timed_out_task_cancel"] = slow.cancel()  # False: it is running and cannot be
        t = time.monotonic()
        ex.submit(task).result()
        out["next_task_after_a_timeout_ms"] = ms(time.monotonic() - t)
    try:
        ProcessPoolExecutor(1, mp_context=mp.get_context("fork"), max_tasks_per_child=2)
        out["max_tasks_per_child_with_fork"] = "accepted"
    except ValueError as exc:
        out["max_tasks_per_child_with_fork"] = f"ValueError: {exc}"
    return out


def pool_part() -> None:
    tasks = 240  # 10 recycles at 24 tasks a worker
    show("pool", kind="kbx compile_pool.Pool, trivial worker", **kbx_pool_figures(tasks))
    for method in ("forkserver", "spawn"):
        show("pool", kind=f"ProcessPoolExecutor {method}", **ppe_figures(tasks, method))


# --- GPU lock against filelock ----------------------------------------------------------------


def handoff_holder(kind: str, path: str, rounds: int, hold_s: float, conn: Any) -> None:
    """In another process: hold the lock exclusively, say when it lets go."""
    if kind == "kbx":
        from kbx.gpu import gpulock

        def hold() -> Any:
            return gpulock.exclusive(path, "bench")
    else:
        from filelock import ReadWriteLock

        lock = ReadWriteLock(path + ".db", is_singleton=False)

        def hold() -> Any:
            return lock.write_lock()

    for _ in range(rounds):
        with hold():
            conn.send("held")
            conn.recv()  # the other side is about to wait
            time.sleep(hold_s)
            conn.send(time.monotonic())
        conn.recv()  # the other side has had its hold (else this one could take it back first)
    conn.close()


def handoff(kind: str, path: str, rounds: int = 15, hold_s: float = 0.3) -> list[float]:
    """Seconds from an exclusive holder letting go to a waiting shared holder getting it."""
    ctx = mp.get_context("fork")
    here, there = ctx.Pipe()
    proc = ctx.Process(target=handoff_holder, args=(kind, path, rounds, hold_s, there))
    proc.start()
    if kind == "kbx":
        from kbx.gpu import gpulock

        def hold() -> Any:
            return gpulock.shared(path, "bench")
    else:
        from filelock import ReadWriteLock

        lock = ReadWriteLock(path + ".db", is_singleton=False)

        def hold() -> Any:
            return lock.read_lock()

    delays = []
    for _ in range(rounds):
        assert here.recv() == "held"
        here.send("go")
        with hold():
            got = time.monotonic()
        delays.append(got - here.recv())
        here.send("next")
    proc.join()
    return delays


def thread_conflict(path: str) -> str:
    """Two threads of one process on filelock's default (singleton) ReadWriteLock: one reads,
    the other asks to write."""
    from filelock import ReadWriteLock

    lock = ReadWriteLock(path + ".single.db")
    held, done = threading.Event(), threading.Event()

    def reader() -> None:
        with lock.read_lock():
            held.set()
            done.wait(5)

    th = threading.Thread(target=reader)
    th.start()
    held.wait(5)
    try:
        with lock.write_lock(timeout=1):
            outcome = "waited and got it"
    except Exception as exc:  # noqa: BLE001 - reported
        outcome = f"{type(exc).__name__}: {str(exc)[:120]}"
    done.set()
    th.join()
    return outcome


def lock_part() -> None:
    if missing("filelock"):
        return
    import filelock

    from kbx.gpu import gpulock

    with tempfile.TemporaryDirectory(prefix="kbx-libs-") as tmp:
        path = str(Path(tmp) / "gpu0.lock")
        rw = filelock.ReadWriteLock(path + ".db")

        def kbx_shared() -> None:
            with gpulock.shared(path, "bench"):
                pass

        def kbx_exclusive() -> None:
            with gpulock.exclusive(path, "bench"):
                pass

        def fl_read() -> None:
            with rw.read_lock():
                pass

        def fl_write() -> None:
            with rw.write_lock():
                pass

        figures = {
            "filelock": filelock.__version__,
            "unit": "us per uncontended hold (take and let go)",
            "kbx_shared": us(per_call(kbx_shared, 300)),
            "kbx_exclusive": us(per_call(kbx_exclusive, 300)),
            "filelock_read": us(per_call(fl_read, 300)),
            "filelock_write": us(per_call(fl_write, 300)),
        }
        for kind in ("kbx", "filelock"):
            delays = handoff(kind, path)
            figures[f"{kind}_handoff_ms_median"] = ms(statistics.median(delays))
            figures[f"{kind}_handoff_ms_max"] = ms(max(delays))
        figures["filelock_two_threads_read_then_write"] = thread_conflict(path)
    show("lock", **figures)


# --- geometric mean ---------------------------------------------------------------------------


def exact_gmean(values: list[float]) -> float:
    getcontext().prec = 60
    logs = sum(Decimal(v).ln() for v in values)
    return float((logs / len(values)).exp())


def gmean_part() -> None:
    from kbx.core.result import geometric_mean

    def handwritten(values: list[float]) -> float:  # kbx.core.result.geometric_mean until 2026-12
        return math.exp(sum(math.log(v) for v in values) / len(values))

    rng = random.Random(0)
    trials = 20_000
    differ, worst, right = 0, 0.0, {"kbx": 0, "statistics": 0}
    for _ in range(trials):
        values = [math.exp(rng.gauss(0.0, 1.5)) for _ in range(rng.randint(1, 12))]
        a, b = handwritten(values), statistics.geometric_mean(values)
        exact = exact_gmean(values)
        right["kbx"] += a == exact
        right["statistics"] += b == exact
        if a != b:
            differ += 1
            worst = max(worst, abs(a - b) / b)
    equal_runs = all(statistics.geometric_mean([2.0] * n) == 2.0 for n in range(1, 33))
    empty = {}
    for name, fn in (("handwritten", handwritten), ("statistics", statistics.geometric_mean)):
        try:
            fn([])
        except Exception as exc:  # noqa: BLE001 - reported
            empty[name] = type(exc).__name__
    four = [1.3, 0.7, 2.9, 1.1]
    show(
        "gmean",
        inputs=f"{trials} lists of 1-12 log-normal values (sigma 1.5), seed 0",
        differ_pct=round(100 * differ / trials, 1),
        worst_relative_difference=f"{worst:.2g}",
        correctly_rounded_pct={k: round(100 * v / trials, 1) for k, v in right.items()},
        statistics_gives_2_for_n_copies_of_2=equal_runs,
        empty_raises=empty,
        kbx_result_geometric_mean_is_statistics=geometric_mean is statistics.geometric_mean,
        us_per_call_4_values={
            "handwritten": us(per_call(lambda: handwritten(four), 20_000)),
            "statistics": us(per_call(lambda: statistics.geometric_mean(four), 20_000)),
        },
    )


# --- scipy.stats for the random tasks' checks -------------------------------------------------


def stats_part() -> None:
    if missing("scipy"):
        return
    import scipy
    import scipy.stats as st
    import torch

    from kbx.suite.checks import off_rate
    from kbx.tasks.Random import rand

    # off_rate's 5-sigma band against the exact binomial test, at the band's edges
    edges = []
    for n, p in ((50, 0.5), (200, 0.1), (10_000, 0.1), (1_000_000, 0.1), (1_000_000, 0.82)):

        def accepts(k: int, n: int = n, p: float = p) -> bool:  # off_rate on k hits of n
            hits = torch.zeros(n, dtype=torch.bool)
            hits[:k] = True
            return off_rate(hits, p, "hits") is None

        band = 5 * math.sqrt(p * (1 - p) / n)
        lo = max(round((p - band) * n), 0)
        hi = min(round((p + band) * n), n)
        lo += 0 if accepts(lo) else 1  # the band's edges, where off_rate puts them
        hi -= 0 if accepts(hi) else 1
        assert accepts(lo) and accepts(hi) and not (lo > 0 and accepts(lo - 1))
        assert not (hi < n and accepts(hi + 1))
        outside = [f"{st.binomtest(k, n, p).pvalue:.2g}" for k in (lo - 1, hi + 1) if 0 <= k <= n]
        inside = [f"{st.binomtest(k, n, p).pvalue:.2g}" for k in (lo, hi)]
        edges.append(
            {"n": n, "p": p, "accepts": [lo, hi], "binomtest_p_at_edges": inside}
            | {"binomtest_p_just_outside": outside}
        )
    normal = 2 * st.norm.sf(5)
    # rand's histogram rule, and what the library would say about the same samples
    x = torch.rand(1 << 20, generator=torch.Generator().manual_seed(0))
    t = time.perf_counter()
    verdict = rand.check(None, x)  # type: ignore[arg-type]
    kbx_s = time.perf_counter() - t
    counts = torch.histc(x, bins=16, min=0.0, max=1.0).double().numpy()
    t = time.perf_counter()
    ks = st.kstest(x.double().numpy(), "uniform")
    ks_s = time.perf_counter() - t
    t = time.perf_counter()
    st.binomtest(104_857, 1 << 20, 0.1)
    bt_s = time.perf_counter() - t
    code = "import time; t = time.monotonic(); import scipy.stats; print(time.monotonic() - t)"
    imports = [float(subprocess.check_output([sys.executable, "-c", code])) for _ in range(3)]
    show(
        "stats",
        scipy=scipy.__version__,
        import_scipy_stats_ms=ms(statistics.median(imports)),
        off_rate_edges=edges,
        five_sigma_two_sided_normal=f"{normal:.2g}",
        rand_chi2_gt_80_df15=f"{st.chi2.sf(80, 15):.2g}",
        rand_check_on_torch_rand_2e20=verdict or "passes",
        rand_check_ms=ms(kbx_s),
        scipy_chisquare_p=f"{st.chisquare(counts).pvalue:.3g}",
        scipy_kstest_p=f"{ks.pvalue:.3g}",
        scipy_kstest_ms=ms(ks_s),
        scipy_binomtest_ms_n_2e20=ms(bt_s),
    )


# --- torch.utils._pytree against kbx.suite.tensors -----------------------------------------


def pytree_part() -> None:
    import torch
    import torch.utils._pytree as pytree

    from kbx.suite import tensors

    class Pair(list):  # a list subclass, as a candidate or a task may return
        pass

    t = torch.ones(2)
    tree = (Pair([t, t]), {"w": t}, [t])
    pt_leaves = pytree.tree_leaves(tree)
    copy = pytree.tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, tree)
    args = (torch.ones(8), [torch.ones(8), torch.ones(8)], (torch.ones(8), 3), 0.5)
    show(
        "pytree",
        tree="(Pair([t, t]), {'w': t}, [t]), Pair a list subclass",
        pytree_leaves=[type(v).__name__ for v in pt_leaves],
        kbx_leaves=[type(v).__name__ for v in tensors.leaves(tree)],
        pytree_tree_map_clone_shares_pair_tensor=copy[0][0] is t,
        kbx_clone_shares_pair_tensor=tensors.clone(tree)[0][0] is t,
        us_leaves_of_5_tensor_args={
            "pytree": us(per_call(lambda: pytree.tree_leaves(args), 20_000)),
            "kbx": us(per_call(lambda: tensors.leaves(args), 20_000)),
        },
    )


# --- psutil against /proc ---------------------------------------------------------------------

TREE = """
import subprocess, sys, threading, time
kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) for _ in range(3)]
for _ in range(3):
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
print("up", flush=True)
sum(i * i for i in range(3_000_000))
time.sleep(30)
"""


def proc_part() -> None:
    if missing("psutil"):
        return
    import psutil

    from kbx.sandbox.childenv import process_cpu_s, tree_cpu_s

    proc = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
    time.sleep(1.0)  # its busy loop done
    pid = proc.pid
    held = psutil.Process(pid)

    def ps_tree(p: psutil.Process) -> float:
        total = sum(p.cpu_times()[:4])
        for c in p.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                total += sum(c.cpu_times()[:4])
        return total

    try:
        show(
            "proc",
            tree="1 process, 3 threads, 3 child processes",
            processes_on_host=len(psutil.pids()),
            cpu_s={"kbx_tree": tree_cpu_s(pid), "psutil_tree": round(ps_tree(held), 2)},
            psutil_cpu_times_fields=list(held.cpu_times()._fields),
            us_per_call={
                "kbx_process_cpu_s": us(per_call(lambda: process_cpu_s(pid), 500)),
                "psutil_cpu_times_new_Process": us(
                    per_call(lambda: psutil.Process(pid).cpu_times(), 500)
                ),
                "psutil_cpu_times_held_Process": us(per_call(held.cpu_times, 500)),
                "kbx_tree_cpu_s": us(per_call(lambda: tree_cpu_s(pid), 200)),
                "psutil_children_recursive_and_cpu_times": us(per_call(lambda: ps_tree(held), 200)),
            },
        )
    finally:
        for child in held.children(recursive=True):
            child.kill()
        proc.kill()
        proc.wait()


# --- pynvml against nvidia-smi ----------------------------------------------------------------


NVML = """
import time
t = time.monotonic()
import pynvml
pynvml.nvmlInit()
version = pynvml.nvmlSystemGetDriverVersion()
print(version, time.monotonic() - t)
"""


def nvml_part() -> None:
    """The driver version, kbx's one query of the GPU outside torch: ``nvidia-smi`` (what
    ``hardware.fingerprint`` runs once a process) against NVML's import, init and query,
    each in a process of its own."""
    from kbx.gpu.hardware import driver_version

    smi, smi_s = [], []
    for _ in range(5):
        t = time.monotonic()
        smi.append(driver_version())
        smi_s.append(time.monotonic() - t)
    figures: dict[str, Any] = {
        "nvidia_smi_driver": smi[-1],
        "nvidia_smi_ms": ms(statistics.median(smi_s)),
    }
    nvml, nvml_s = None, []
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", NVML], capture_output=True, text=True)
        if out.returncode != 0:
            nvml = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"
            break
        nvml, spent = out.stdout.split()
        nvml_s.append(float(spent))
    figures["pynvml_driver"] = nvml
    if nvml_s:
        figures["pynvml_ms"] = ms(statistics.median(nvml_s))
    show("nvml", **figures)


PARTS = {
    "forkserver": forkserver_part,
    "forkparts": forkparts_part,
    "sandbox": sandbox_part,
    "pool": pool_part,
    "lock": lock_part,
    "gmean": gmean_part,
    "stats": stats_part,
    "pytree": pytree_part,
    "proc": proc_part,
    "nvml": nvml_part,
}

if __name__ == "__main__":
    import platform

    import torch

    if "KBX_LIBRARIES_PART" not in os.environ:  # not in a part's own process
        show(
            "machine",
            python=platform.python_version(),
            torch=torch.__version__,
            cores=os.cpu_count(),
            loadavg=os.getloadavg(),
        )
    for name in sys.argv[1:] or list(PARTS):
        PARTS[name]()
