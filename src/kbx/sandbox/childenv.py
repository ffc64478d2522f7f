"""The child's settings and surroundings: what it may see of the environment, its GPU, its
file size cap and its folder's size, and the fork server's environment (the children's, less
what each sets for itself).

``settings`` cuts a run's ``EvalConfig`` to the ``ChildConfig`` one job's child runs under
(``kbx.sandbox.wire.job``); paths are made absolute, since the child runs in a folder of its own.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from kbx.core.config import EvalConfig
from kbx.core.proctree import tree_pids
from kbx.sandbox import expect
from kbx.sandbox.wire import outputs
from kbx.sandbox.wire.job import ChildConfig
from kbx.suite.task import Task


def settings(cfg: EvalConfig) -> ChildConfig:
    """The child's settings for ``cfg``: the run folder's Triton cache (or the tuning's shared
    one: the parent's store of compiled kernels, ``kernels``) and, on a GPU, that GPU's lock and
    timing core."""
    run_dir = cfg.run_dir.resolve() if cfg.run_dir else None
    tuning = cfg.tuning
    cache = tuning.triton_cache.resolve() if tuning.triton_cache else None
    if cache is None and run_dir is not None:
        cache = run_dir / "triton-cache"
    cuda = cfg.device == "cuda"
    lock = run_dir / f"gpu{cfg.gpu or 0}.lock" if run_dir and cuda else None
    return ChildConfig(
        device=cfg.device,
        timed=cfg.timed,
        limits=cfg.limits,
        threads=cfg.threads,
        require_triton=cfg.require_triton,
        triton_cache=cache,
        lock=str(lock) if lock else None,
        gpu=cfg.gpu,
        profile=tuning.profile,
        fork_server=tuning.fork_server,
        timing_core=cfg.timing_core if cuda else None,
        connections=tuning.connections,
        timing_rel_ci=tuning.timing_rel_ci,
        timing_budget_ms=tuning.timing_budget_ms,
    )


# torch's profiler (kineto) prints "USDT: ... profiler_start/stop" to stderr at each session, at
# every level below this one (its levels end at 5, USDT): the children's profile every candidate
QUIET_KINETO = "6"
ENV_KEEP = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_HOME",
    "CUDA_PATH",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "TRITON_PTXAS_PATH",
    "TRITON_LIBCUDA_PATH",
)


def child_env(workdir: Path, cfg: ChildConfig) -> dict[str, str]:
    """The child's whole environment."""
    env = {k: os.environ[k] for k in ENV_KEEP if k in os.environ}
    env.update(
        HOME=str(workdir),
        TMPDIR=str(workdir),
        USER="kbx-child",  # its uid has no passwd entry: getpass.getuser() reads these first
        LOGNAME="kbx-child",
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONPATH=SOURCE_ROOT,
        OMP_NUM_THREADS=str(cfg.threads),
        MKL_NUM_THREADS=str(cfg.threads),
        TRITON_CACHE_DIR=str(workdir / "triton-cache"),  # its own (``kernels``)
        # autotuning results go to that cache too: a kernel seen before (by the same code on the
        # same task, in an earlier run sharing the store) is not benchmarked again
        TRITON_CACHE_AUTOTUNING="1",
        KINETO_LOG_LEVEL=QUIET_KINETO,
    )
    if cfg.gpu is not None:  # the child sees only its GPU, as cuda:0
        env["CUDA_VISIBLE_DEVICES"] = visible_gpu(cfg.gpu)
    if cfg.compile_for is not None:  # a compile stage's child sees no GPU at all
        env["CUDA_VISIBLE_DEVICES"] = ""
    if cfg.connections:  # in the fork server's environment too: its spares' contexts
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = str(cfg.connections)
    return env


def server_env(cfg: ChildConfig) -> dict[str, str]:
    """The fork server's environment: the children's, less what each child sets for itself
    (its folder, its GPU)."""
    env = child_env(Path("."), cfg.model_copy(update={"gpu": None, "compile_for": None}))
    return env


def first_spares(cfg: ChildConfig, slots: Sequence[int | None]) -> dict[str, int]:
    """The spares to fork at the server's start: one per job slot, by visible devices."""
    return dict(Counter(visible_devices(cfg, gpu) for gpu in slots))


def visible_devices(cfg: ChildConfig, gpu: int | None) -> str:
    """CUDA_VISIBLE_DEVICES of a child on ``gpu`` (empty: not set), as the fork server keys its
    spares."""
    return child_env(Path("."), cfg.model_copy(update={"gpu": gpu})).get("CUDA_VISIBLE_DEVICES", "")


SOURCE_ROOT = str(Path(__file__).resolve().parents[2])  # what a kbx subprocess imports from


def visible_gpu(gpu: int) -> str:
    """CUDA_VISIBLE_DEVICES for a process that must see only this parent's GPU ``gpu``."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
    return visible[gpu] if gpu < len(visible) and visible[0] else str(gpu)


def file_cap(task: Task, device: str) -> int:
    """The largest file a child may write (RLIMIT_FSIZE): four times the largest output file the
    parent reads (``outputs.case_bytes_cap`` of the largest case it runs, three runs for a
    random task), so that an output somewhat too large is still read and named, while a
    candidate cannot fill the folder's memory-backed disk with one file."""
    cases = list(task.cases) + [task.bench[i] for i in expect.bench_plan(task, device)]
    runs = 3 if task.random else 1
    return 4 * max(outputs.case_bytes_cap(runs * task.held_bytes(c)) for c in cases)


def folder_bytes(task: Task, device: str, runs: dict[tuple[str, int], int]) -> int:
    """The size of a child's own filesystem (``folder``): room for every output file it hands
    back (``runs``: the runs of each, as ``expect`` lists them; an output is at most the bytes
    its case holds, ``Task.held_bytes``, and a header), and one more file at its size cap
    (``file_cap``) for the candidate's own files, its kernel cache and outputs somewhat too
    large.  A candidate that fills it fills only its own disk."""
    total = file_cap(task, device)
    for (kind, index), count in runs.items():
        case = (task.cases if kind in ("cases", "refill") else task.bench)[index]
        total += count * task.held_bytes(case) + (1 << 20)
    return total


def process_cpu_s(pid: int) -> float | None:
    """CPU seconds of a live process so far, with those of its children it has waited for
    (Triton's ``ptxas``): ``/proc/<pid>/stat``; None where there is no such file."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return (utime + stime + cutime + cstime) / os.sysconf("SC_CLK_TCK")


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of ``pid`` and every live descendant, each with the children it has reaped."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for here in tree_pids(pid):
        try:
            stat = Path(f"/proc/{here}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        total += sum(int(f) for f in fields[11:15]) / tick
    return total
