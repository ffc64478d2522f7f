"""Run one candidate in a child process: scrubbed environment, own folder, per-stage timeouts.

The child (``child.py``) reports progress on a pipe.  The parent enforces a deadline for each
stage and turns every way the child can end (signal, abort, hang, early exit) into a verdict for
this candidate alone.  The child's folder (``folder``: a filesystem of its own where the machine
allows) is read only through descriptors the parent opened: its streams, kept open, and its
output files, opened without following links; a name of kbx's in it replaced is ``forbidden``.
Only this module and the CLI read environment variables.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbx.core import incidents
from kbx.core.proctree import tree_pids
from kbx.sandbox import confine, expect, kernels, stderrs
from kbx.sandbox.childenv import (
    child_env,
    file_cap,
    folder_bytes,
    server_env,
    tree_cpu_s,
)
from kbx.sandbox.expect import Key
from kbx.sandbox.folder import Folder
from kbx.sandbox.follow import CutOff, Follower, next_message
from kbx.sandbox.servers import ForkedProcess, ForkServers
from kbx.sandbox.wire import channel, outputs
from kbx.sandbox.wire.confinement import limit_resources
from kbx.sandbox.wire.job import ChildConfig, Job
from kbx.suite.task import Task
from kbx.suite.verdict import SHARED_DISK_FULL, START_FAILED, Reject, Verdict

__all__ = ["ChildConfig", "ChildRun", "run_child"]

MEMORY_WAIT_S = 2.0  # before a forked child whose set-up found the GPU full runs again
GONE_S = 30.0  # for the child's processes to be gone (their files closed) after its kill


@dataclass
class ChildRun:
    outputs: dict[Key, list[Any]] = field(default_factory=dict)  # exactly the expected ones
    timings: list[dict[str, Any]] = field(default_factory=list)
    stage_s: dict[str, float] = field(default_factory=dict)  # spawn, setup, ..., kill, load
    variants: dict[int, int] = field(default_factory=dict)  # contents of each last timed call
    checked: dict[str, int] = field(default_factory=dict)  # cases checked, by kind
    triton_share: dict[str, float] = field(default_factory=dict)  # GPU time in Triton (cuda)


def run_child(
    task: Task,
    code: str,
    cfg: ChildConfig,
    servers: ForkServers | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> ChildRun:
    """Run the candidate in a child; if a child from the fork server cannot even set up (kbx's
    fault, e.g. CUDA unusable after the fork on some machine), the fork server is given up for
    this device and the candidate runs again in a fresh interpreter.  A set-up that ran out of
    GPU memory (the device was full for a moment) is no fault of the fork server: the
    candidate runs again from it, ``MEMORY_WAIT_S`` later (the memory of the jobs before it
    is on its way back): otherwise one such child would turn the server off for the rest of a
    run, and every later child would start a fresh interpreter.  ``on_stage`` is told each
    stage the child enters (``setting up``, ``import``, ``cases 2``...)."""
    for attempt in (1, 2):
        child = Child(task, code, cfg, servers, on_stage)
        try:
            return child.run()
        except Reject as r:
            if attempt == 2 or not child.forked or r.verdict != Verdict.HARNESS_ERROR:
                raise
            if stderrs.lacked_memory(r.detail):
                time.sleep(MEMORY_WAIT_S)
            elif servers is not None:
                servers.give_up(cfg.device, r.detail)
    raise AssertionError("unreachable")


def scratch_root() -> str | None:
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def private_folders() -> bool:
    """Whether children get a mount namespace to attach a filesystem of their own in."""
    return "mount" in confine.probe().layers


# The child's setup, as it reports it: imports (after the fork), the CUDA context, the profiler's
# first session (profiled runs), inputs (less GPU-lock waits) and kbx's launch hooks; what the
# setup stage has beyond them is the fork.
SETUP_PARTS = ("imports", "context", "profiler", "inputs", "hooks")


class Child:
    def __init__(
        self,
        task: Task,
        code: str,
        cfg: ChildConfig,
        servers: ForkServers | None = None,
        on_stage: Callable[[str], None] | None = None,
    ) -> None:
        self.servers, self.on_stage = servers, on_stage
        self.made = time.monotonic()  # ``spawn`` counts from here: the folder's files too
        self.task, self.cfg, self.code = task, cfg, code
        self.expected = expect.expected(task, cfg.device, cfg.timed)
        size = folder_bytes(task, cfg.device, self.expected.runs)
        self.folder = Folder(scratch_root(), size, private_folders())
        self.workdir = self.folder.path
        self.store = kernels.entry(kernels.store_root(cfg.triton_cache), task.id, code)
        self.stage = "setting up"
        self.forked = False
        self.spawn_s = 0.0
        self.key = secrets.token_hex(32)  # signs the child's messages (``channel.sign``)

    def run(self) -> ChildRun:
        """The child's whole life, its folder closed and removed after it."""
        settings: dict[str, Any] | None = None
        try:
            settings = confine.prepare(self.workdir, [], self.cfg.device, self.shared())
            return self.run_in(settings)
        finally:
            confine.release(settings)
            self.folder.close()

    def run_in(self, settings: dict[str, Any]) -> ChildRun:
        folder = self.folder
        folder.own(settings["uid"])
        folder.write("candidate.py", self.code.encode())
        kernels.fill(self.store, folder)  # the child's own cache, with its warm kernels
        settings["limits"]["fsize"] = file_cap(self.task, self.cfg.device)
        if folder.private:
            dev, ino = folder.identity
            settings["scratch"] = {"path": str(self.workdir), "dev": dev, "ino": ino}
        read_fd, write_fd = os.pipe()
        job = Job(
            task_id=self.task.id,
            bench=tuple(self.expected.bench),
            msg_fd=write_fd,
            key=self.key,
            confine=settings,
            config=self.cfg,
        )
        folder.write_job("job.json", job.model_dump_json().encode())
        try:
            self.proc = self.start(
                write_fd, folder.streams["stdout.txt"], folder.streams["stderr.txt"]
            )
            self.spawn_s = time.monotonic() - self.made  # a fork server still starting, included
            os.close(write_fd)
            write_fd = -1
            try:
                run = self.follow(read_fd)
            finally:
                os.close(read_fd)
                self.kill()
        finally:
            if write_fd >= 0:
                os.close(write_fd)
        kernels.keep(folder, self.store, self.cfg.timed)  # its kernels, for a warm run
        return run

    def shared(self) -> list[Path]:
        """What the child may write besides its folder: the GPU lock's files, made here first
        and open to every child's uid."""
        paths: list[Path] = []
        if self.cfg.lock is not None:
            for suffix in ("", ".gate", ".log"):
                path = Path(self.cfg.lock + suffix)
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o666))
                path.chmod(0o666)
                paths.append(path)
        return paths

    def start(
        self, msg_fd: int, out_fd: int, err_fd: int
    ) -> subprocess.Popen[bytes] | ForkedProcess:
        """The child process: forked by the fork server when there is one, else a fresh
        interpreter."""
        env = child_env(self.workdir, self.cfg)
        extra = [self.folder.mount] if self.folder.private else []  # attached by the child
        pool = self.servers
        if pool is not None and self.cfg.fork_server and pool.usable(self.cfg.device):
            server = pool.server_for(self.cfg.device, server_env(self.cfg))
            if server is not None:
                try:
                    fds = [msg_fd, out_fd, err_fd, *extra]
                    plain = self.cfg.compile_for is not None
                    forked = server.spawn("job.json", str(self.workdir), env, fds, plain)
                    self.forked = True
                    return forked
                except RuntimeError:
                    pass  # a fresh interpreter instead
        return subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-m", "kbx.sandbox.child.main", "job.json"],
            cwd=self.workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out_fd,
            stderr=err_fd,
            pass_fds=(msg_fd, *extra),
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
            self.cfg.timed,
            self.cfg.require_triton,
        )
        follower.use_lock(self.cfg.lock)
        try:
            while True:
                msg = next_message(reader, follower, verifier)
                self.moved(follower.stage.name)
                if msg is None:
                    raise self.died()
                done = follower.take(msg)
                self.moved(follower.stage.name)  # the stage the message began
                if done:
                    return self.finish(follower, self.expected)
        except CutOff:
            return self.finish(follower, follower.partial())
        finally:
            self.stage = follower.stage.name

    def moved(self, stage: str) -> None:
        """The child is at ``stage`` now (``on_stage`` is told of a new one)."""
        if stage != self.stage:
            self.stage = stage
            if self.on_stage is not None:
                self.on_stage(stage)

    def finish(self, follower: Follower, expected: expect.Expected) -> ChildRun:
        cpu = tree_cpu_s(self.proc.pid)  # before the kill: read from the kernel's counts
        killing = time.monotonic()
        self.kill()  # nothing of the candidate's may still write while outputs load
        if tampered := self.folder.tampered():
            raise Reject(Verdict.FORBIDDEN, tampered)
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

    def load(self, key: expect.Key, runs: int, announced: tuple[str, str, int | None, int]) -> Any:
        """One expected output file, as announced (its name, the hash of its bytes and their
        count)."""
        kind, index = key
        name, digest, _, size = announced
        case = (self.task.cases if kind in ("cases", "refill") else self.task.bench)[index]
        cap = outputs.case_bytes_cap(runs * self.task.held_bytes(case))
        try:
            if name != outputs.file_name(kind, index):
                raise outputs.OutputError(f"{name}: not the file kbx names {kind} {index}")
            got = outputs.read_case(
                self.workdir / name, cap, digest, self.folder.fd, self.folder.owner, size
            )
        except outputs.TooLarge as exc:  # kbx's child wrote what the candidate returned
            raise Reject(
                Verdict.WRONG_SHAPE,
                f"{kind} {index} ({case.label()}): outputs of {exc.size} bytes, "
                f"over the {cap} this case allows",
            ) from None
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
        if self.stage != "setting up" and (tampered := self.folder.tampered()):
            return Reject(Verdict.FORBIDDEN, tampered)
        err = self.folder.tail("stderr.txt")
        tail = stderrs.summary(err, self.workdir)
        if stderrs.lacked_space(tail):
            if not self.folder.private:  # a disk others write too: judged again alone
                return Reject(Verdict.CRASHED, f"{SHARED_DISK_FULL} during {self.stage}: {tail}")
            tail += f" (its own folder's {self.folder.size >> 20} MiB, which it filled)"
        if self.stage == "setting up":  # kbx's own code: its trace kept in the run folder
            kept = incidents.save(f"start-{self.task.id}", err)
            why = f"{START_FAILED} (exit {code}): {tail}"
            return Reject(Verdict.HARNESS_ERROR, why + incidents.where(kept))
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

    def kill(self) -> None:
        """End the child and every process below it, and wait until each is gone: the
        candidate's process (the namespace's pid 2, in a session of its own) ends as its pid 1
        does, which may be after the child the parent waits for; until then it holds its
        files (a lease on an output would make the parent's open of it fail:
        ``tests/exploits/output_lease``)."""
        held = []
        for pid in tree_pids(self.proc.pid):
            with contextlib.suppress(OSError):
                held.append(os.pidfd_open(pid))
        try:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            deadline = time.monotonic() + GONE_S
            for fd in held:  # readable once its process has ended (its files closed)
                select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        finally:
            for fd in held:
                os.close(fd)
