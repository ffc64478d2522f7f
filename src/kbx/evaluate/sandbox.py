"""Run one candidate in a child process: scrubbed environment, own folder, per-stage timeouts.

The child (``child.py``) reports progress on a pipe.  The parent enforces a deadline for each
stage and turns every way the child can end (signal, abort, hang, early exit) into a verdict for
this candidate alone.  Only this module and the CLI read environment variables.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

import kbx
from kbx import trace
from kbx.evaluate import channel, confine, expect, outputs
from kbx.evaluate.expect import Key
from kbx.evaluate.follow import CutOff, Follower, next_message, tree_cpu_s
from kbx.runtime import forkserver
from kbx.task import Task
from kbx.verdict import Reject, Verdict

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
MAX_FILE_BYTES = 16 << 30
# Hardware work queues of a child's CUDA context (CUDA_DEVICE_MAX_CONNECTIONS; the driver's default
# is 8).  A host makes and tears down contexts one at a time for all its GPUs, about twice as fast
# with one queue as with 8, and that rate bounds a run's children (``scripts/context_rate.py``;
# docs/design/throughput.md, Fork server and spares).  With one queue the streams of a child still
# run side by side, in the order their work was sent (docs/design/timing.md).  ``KBX_CONNECTIONS``
# overrides it; 0 leaves the driver's default.
CONNECTIONS = 1


@dataclass(frozen=True)
class Limits:
    """Per-stage limits of a child: CPU seconds of its process tree (a loaded machine does not
    make them run out sooner), each with a wall-clock backstop ``wall_factor`` times larger
    (a child that sleeps or blocks); kbx's own set-up and GPU-lock queueing in wall seconds."""

    setup_s: float = 180.0  # kbx's own start-up in the child: torch, inputs (wall)
    import_s: float = 60.0
    case_s: float = 120.0  # one correctness case (first calls include compile and autotune)
    timing_s: float = 120.0  # one benchmark case's timing
    bench_cpu_s: float = 20.0  # one benchmark case on the CPU: past it, left unchecked
    wall_factor: float = 4.0
    lock_s: float = 1800.0  # queueing for the per-GPU lock (other candidates' timings, wall)


@dataclass(frozen=True)
class SandboxConfig:
    device: str
    perf: bool
    require_triton: bool = True
    limits: Limits = Limits()
    cache_dir: Path | None = None  # Triton kernel cache shared by the run's children
    lock_path: Path | None = None  # per-GPU timing lock
    threads: int = 1
    gpu: int | None = None  # index among the parent's visible GPUs; None: the default one
    profile: bool = False  # also measure kernel time with the torch profiler (cross-check)
    fork: bool = True  # start children from the fork server (forkserver.py), not a new Python
    timing_core: int | None = None  # the core its timing turn runs on (``cores``)

    @property
    def lock(self) -> str | None:
        """The GPU lock's path as the child, the parent and the baseline workers name it."""
        return str(self.lock_path) if self.lock_path else None


@dataclass
class ChildRun:
    outputs: dict[Key, list[Any]] = field(default_factory=dict)  # exactly the expected ones
    timings: list[dict[str, Any]] = field(default_factory=list)
    stage_s: dict[str, float] = field(default_factory=dict)  # spawn, setup, ..., kill, load
    variants: dict[int, int] = field(default_factory=dict)  # contents of each last timed call
    checked: dict[str, int] = field(default_factory=dict)  # cases checked, by kind
    triton_share: dict[str, float] = field(default_factory=dict)  # GPU time in Triton (cuda)


def run_child(task: Task, code: str, cfg: SandboxConfig) -> ChildRun:
    """Run the candidate in a child; if a child from the fork server cannot even set up (kbx's
    fault, e.g. CUDA unusable after the fork on some machine), the fork server is given up for
    this device and the candidate runs again in a fresh interpreter.  A set-up that ran out of
    GPU memory (the device was full for a moment) is no fault of the fork server: the
    candidate runs again from it: otherwise one such child would turn the server off for the
    rest of a run, and every later child would start a fresh interpreter."""
    for attempt in (1, 2):
        workdir = Path(tempfile.mkdtemp(prefix="kbx-", dir=scratch_root()))
        child = Child(task, code, cfg, workdir)
        try:
            return child.run()
        except Reject as r:
            if attempt == 2 or not child.forked or r.verdict != Verdict.HARNESS_ERROR:
                raise
            if not lacked_memory(r.detail):
                forkserver.give_up(cfg.device, r.detail)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    raise AssertionError("unreachable")


def lacked_memory(detail: str) -> bool:
    """Whether a child's failure reads as the device's memory running out."""
    return "out of memory" in detail.lower()


def scratch_root() -> str | None:
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def child_env(workdir: Path, cfg: SandboxConfig) -> dict[str, str]:
    """The child's whole environment."""
    env = {k: os.environ[k] for k in ENV_KEEP if k in os.environ}
    env.update(
        HOME=str(workdir),
        TMPDIR=str(workdir),
        USER="kbx-child",  # its uid has no passwd entry: getpass.getuser() reads these first
        LOGNAME="kbx-child",
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONPATH=KBX_PATH,
        OMP_NUM_THREADS=str(cfg.threads),
        MKL_NUM_THREADS=str(cfg.threads),
        TRITON_CACHE_DIR=str(cfg.cache_dir or workdir / "triton-cache"),  # Child: its own
        # autotuning results go to that cache too: a kernel seen before (another candidate's,
        # or the same one in an earlier run sharing the cache) is not benchmarked again
        TRITON_CACHE_AUTOTUNING="1",
    )
    if cfg.gpu is not None:  # the child sees only its GPU, as cuda:0
        env["CUDA_VISIBLE_DEVICES"] = visible_gpu(cfg.gpu)
    if queues := connections():  # in the fork server's environment too: its spares' contexts
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = str(queues)
    return env


def connections() -> int:
    """A child context's hardware work queues (``CONNECTIONS``, ``KBX_CONNECTIONS``)."""
    return int(os.environ.get("KBX_CONNECTIONS", CONNECTIONS))


def server_env(cfg: SandboxConfig) -> dict[str, str]:
    """The fork server's environment: the children's, less what each child sets for itself
    (its folder, its GPU)."""
    env = child_env(Path("."), dataclasses.replace(cfg, gpu=None))
    if trace.on():  # the server's own marks; its children's environments leave it out
        env[trace.VAR] = "1"
    return env


def start_server(
    cfg: SandboxConfig, slots: Sequence[int | None] = (), launched: Launched | None = None
) -> None:
    """Start the fork server of ``cfg``'s device in the background, where children will be
    forked: its imports (seconds) then overlap the rest of the run's set-up, and the first
    children, which wait for it (``forkserver.server_for``), find it ready or nearly.  ``slots``:
    the GPU of each job slot of this process; the server forks a spare for each at once, so
    that the run's first children, which all start together, find their contexts made.
    ``launched``: a server another process started for this one (``launch_server``)."""
    if launched is not None:
        forkserver.adopt(cfg.device, *launched)
    if forks(cfg):
        threading.Thread(
            target=forkserver.server_for,
            args=(cfg.device, server_env(cfg), first_spares(cfg, slots)),
            daemon=True,
        ).start()


def forks(cfg: SandboxConfig) -> bool:
    """Whether ``cfg``'s children come from a fork server: asked for, not given up, and with
    something to fork for (not a CUDA configuration on a machine without a GPU)."""
    if not (cfg.fork and forkserver.usable(cfg.device)):
        return False
    return not cfg.device.startswith("cuda") or torch.cuda.is_available()


# a server started for another process: its socket, its pid and its environment
Launched = tuple[socket.socket, int, dict[str, str]]


def launch_server(
    cfg: SandboxConfig, slots: Sequence[int | None], spares: int
) -> tuple[Launched, subprocess.Popen[bytes]] | None:
    """Start, without waiting for it, the fork server of a worker process (``kbx.run.workers``) with
    ``spares`` idle spares and one for each of its ``slots``; the worker adopts it
    (``start_server``) and the caller reaps the process.  Started here, the server and its
    spares' contexts do not wait for the worker's own imports (seconds); None where there is
    nothing to fork for."""
    if not forks(cfg):
        return None
    env = server_env(cfg)
    try:
        sock, proc = forkserver.launch(cfg.device, env, spares, first_spares(cfg, slots))
    except OSError as exc:  # as for a server that would not start: fresh interpreters
        forkserver.give_up(cfg.device, f"{type(exc).__name__}: {exc}")
        return None
    return (sock, proc.pid, env), proc


def first_spares(cfg: SandboxConfig, slots: Sequence[int | None]) -> dict[str, int]:
    """The spares to fork at the server's start: one per job slot, by visible devices."""
    return dict(Counter(visible_devices(cfg, gpu) for gpu in slots))


def visible_devices(cfg: SandboxConfig, gpu: int | None) -> str:
    """CUDA_VISIBLE_DEVICES of a child on ``gpu`` (empty: not set), as the fork server keys its
    spares."""
    return child_env(Path("."), dataclasses.replace(cfg, gpu=gpu)).get("CUDA_VISIBLE_DEVICES", "")


KBX_PATH = str(Path(kbx.__file__).resolve().parent.parent)  # what a kbx subprocess imports from


def visible_gpu(gpu: int) -> str:
    """CUDA_VISIBLE_DEVICES for a process that must see only this parent's GPU ``gpu``."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
    return visible[gpu] if gpu < len(visible) and visible[0] else str(gpu)


# The child's setup, as it reports it: imports (after the fork), the CUDA context, the profiler's
# first session (profiled runs), inputs (less GPU-lock waits) and kbx's launch hooks; what the
# setup stage has beyond them is the fork.
SETUP_PARTS = ("imports", "context", "profiler", "inputs", "hooks")


def file_cap(task: Task, device: str) -> int:
    """The largest file a child may write (RLIMIT_FSIZE): four times the largest output file the
    parent reads (``outputs.case_bytes_cap`` of the largest case it runs, three runs for a
    random task), so that an output somewhat too large is still read and named, while a
    candidate cannot fill the folder's memory-backed disk with one file."""
    cases = list(task.cases) + [task.bench[i] for i in expect.bench_plan(task, device)]
    runs = 3 if task.random else 1
    return 4 * max(outputs.case_bytes_cap(runs * int(task.bytes_moved(c))) for c in cases)


def kernel_cache(cfg: SandboxConfig, workdir: Path, code: str) -> Path:
    """The Triton kernel cache a child writes: the run's (or ``--triton-cache``'s), in a folder
    of this candidate's code alone, so that no candidate can plant a kernel or an autotuning
    choice that another one loads, while the same code evaluated again (a warm run) finds its
    own; without a run folder, one in the child's own folder."""
    folder = workdir / "triton-cache"
    if cfg.cache_dir is not None:
        folder = cfg.cache_dir / hashlib.sha256(code.encode()).hexdigest()[:24]
    folder.mkdir(parents=True, exist_ok=True)
    return folder


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


def limit_resources() -> None:  # runs in the child between fork and exec
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # an abort must not leave a core file
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))


class Child:
    def __init__(self, task: Task, code: str, cfg: SandboxConfig, workdir: Path) -> None:
        self.made = time.monotonic()  # ``spawn`` counts from here: the folder's files too
        self.task, self.cfg, self.workdir = task, cfg, workdir
        (workdir / "candidate.py").write_text(code)
        self.cache = kernel_cache(cfg, workdir, code)
        self.expected = expect.expected(task, cfg.device, cfg.perf)
        self.stage = "setting up"
        self.forked = False
        self.spawn_s = 0.0
        self.key = secrets.token_hex(32)  # signs the child's messages (``channel.sign``)

    def run(self) -> ChildRun:
        read_fd, write_fd = os.pipe()
        settings = confine.prepare(self.workdir, [], self.cfg.device, self.shared())
        settings["limits"]["fsize"] = file_cap(self.task, self.cfg.device)
        job = {
            "task_id": self.task.id,
            "device": self.cfg.device,
            "perf": self.cfg.perf,
            "bench": list(self.expected.bench),
            "require_triton": self.cfg.require_triton,
            "profile": self.cfg.profile,
            "msg_fd": write_fd,
            "lock": self.cfg.lock,
            "timing_core": self.cfg.timing_core,
            "confine": settings,
            "key": self.key,
        }
        (self.workdir / "job.json").write_text(json.dumps(job))
        try:
            with (
                open(self.workdir / "stdout.txt", "wb") as out,
                open(self.workdir / "stderr.txt", "wb") as err,
            ):
                self.proc = self.start(write_fd, out.fileno(), err.fileno())
            self.spawn_s = time.monotonic() - self.made  # a fork server still starting, included
            os.close(write_fd)
            try:
                return self.follow(read_fd)
            finally:
                os.close(read_fd)
                self.kill()
        finally:
            confine.release(settings)

    def shared(self) -> list[Path]:
        """What the child may write besides its folder: its kernel cache and the GPU lock's
        files, made here first and open to every child's uid (landlock keeps each child to its
        own cache folder)."""
        paths = [self.cache]
        self.cache.chmod(0o777)
        if self.cfg.lock_path is not None:
            for suffix in ("", ".gate", ".log"):
                path = Path(str(self.cfg.lock_path) + suffix)
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o666))
                path.chmod(0o666)
                paths.append(path)
        return paths

    def start(
        self, msg_fd: int, out_fd: int, err_fd: int
    ) -> subprocess.Popen[bytes] | forkserver.ForkedProcess:
        """The child process: forked by the fork server when there is one, else a fresh
        interpreter."""
        env = child_env(self.workdir, self.cfg)
        env["TRITON_CACHE_DIR"] = str(self.cache)
        if self.cfg.fork and forkserver.usable(self.cfg.device):
            server = forkserver.server_for(self.cfg.device, server_env(self.cfg))
            if server is not None:
                try:
                    forked = server.spawn(
                        "job.json", str(self.workdir), env, [msg_fd, out_fd, err_fd]
                    )
                    self.forked = True
                    return forked
                except RuntimeError:
                    pass  # a fresh interpreter instead
        return subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-m", "kbx.evaluate.child", "job.json"],
            cwd=self.workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out_fd,
            stderr=err_fd,
            pass_fds=(msg_fd,),
            start_new_session=True,
            preexec_fn=limit_resources,
        )

    def follow(self, fd: int) -> ChildRun:
        reader, verifier = channel.LineReader(fd), channel.Verifier(self.key)
        follower = Follower(
            self.proc.pid,
            self.expected,
            self.cfg.limits,
            self.cfg.device,
            self.cfg.perf,
            self.cfg.require_triton,
        )
        follower.locked = self.cfg.lock_path is not None
        try:
            while True:
                msg = next_message(reader, follower, verifier)
                self.stage = follower.stage.name
                if msg is None:
                    raise self.died()
                if follower.take(msg):
                    return self.finish(follower, self.expected)
        except CutOff:
            return self.finish(follower, follower.partial())
        finally:
            self.stage = follower.stage.name

    def finish(self, follower: Follower, expected: expect.Expected) -> ChildRun:
        cpu = tree_cpu_s(self.proc.pid)  # before the kill: read from the kernel's counts
        killing = time.monotonic()
        self.kill()  # nothing of the candidate's may still write while outputs load
        loading = time.monotonic()
        got = follower.got
        run = ChildRun(timings=got.timings, checked=expected.checked())
        run.triton_share = {k: round(v, 4) for k, v in got.shares.items() if v is not None}
        for key, runs in expected.runs.items():
            run.outputs[key] = self.load(key, runs, got.files[key])
            if key[0] == "timed" and got.files[key][2] is not None:
                run.variants[key[1]] = int(got.files[key][2] or 0)
        spent = dict(got.spent, kill=loading - killing, load=time.monotonic() - loading)
        spent["spawn"] = self.spawn_s  # before the setup stage: the request for the child
        run.stage_s = {k: round(v, 3) for k, v in spent.items()}
        run.stage_s["child_cpu"] = round(cpu, 3)
        for name in SETUP_PARTS:  # parts of the setup stage, as the child measured them
            if name in got.setup_parts:
                run.stage_s[f"setup_{name}"] = float(got.setup_parts[name])
        return run

    def load(self, key: expect.Key, runs: int, announced: tuple[str, str, int | None]) -> Any:
        """One expected output file, as announced (its name and the hash of its bytes)."""
        kind, index = key
        name, digest, _ = announced
        case = (self.task.cases if kind in ("cases", "refill") else self.task.bench)[index]
        cap = outputs.case_bytes_cap(runs * int(self.task.bytes_moved(case)))
        path = self.workdir / name
        if name == outputs.file_name(kind, index) and path.is_file() and path.stat().st_size > cap:
            raise Reject(  # kbx's child wrote what the candidate returned: far too much
                Verdict.WRONG_SHAPE,
                f"{kind} {index} ({case.label()}): outputs of {path.stat().st_size} bytes, "
                f"over the {cap} this case allows",
            )
        try:
            if name != outputs.file_name(kind, index):
                raise outputs.OutputError(f"{name}: not the file kbx names {kind} {index}")
            got = outputs.read_case(path, cap, digest)
        except outputs.OutputError as exc:
            raise Reject(Verdict.FORBIDDEN, f"its outputs were tampered with: {exc}") from None
        if len(got) != runs:
            raise Reject(Verdict.FORBIDDEN, f"{kind} {index}: {len(got)} runs, kbx made {runs}")
        return got

    def died(self) -> Reject:
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.wait()
        tail = self.stderr_tail()
        if self.stage == "setting up":
            return Reject(Verdict.HARNESS_ERROR, f"child failed to start (exit {code}): {tail}")
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
            return Reject(
                Verdict.CRASHED,
                f"process killed by {name} during {self.stage}" + (f": {tail}" if tail else ""),
            )
        return Reject(
            Verdict.CRASHED,
            f"process exited with code {code} during {self.stage} "
            "before reporting" + (f": {tail}" if tail else ""),
        )

    def stderr_tail(self) -> str:
        """The fault handler's headline and the candidate's innermost line, else the last lines."""
        try:
            text = (self.workdir / "stderr.txt").read_text(errors="replace")
        except OSError:
            return ""
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        fatal = [ln for ln in lines if ln.startswith("Fatal Python error")]
        ours = [ln for ln in lines if "candidate.py" in ln]
        if fatal:
            where = ours[0].replace('File "', "").replace('"', "") if ours else ""
            where = where.replace(f"{self.workdir}/", "")
            return f"{fatal[0]}" + (f" ({where})" if where else "")
        return " | ".join(lines[-3:])[-400:]

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
