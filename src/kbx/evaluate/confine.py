"""Confinement of a candidate's child process: existing Linux mechanisms, one layer each.

The child runs hostile code, so it gets what the kernel offers to contain it (docs/design/
sandbox.md: the threat each layer stops, what a missing one leaves open, the test that proves
it). ``isolate`` gives it pid, network, mount and IPC namespaces under an init that is kbx code
(the kernel kills the whole namespace when that init ends). ``restrict``, in the worker before
any candidate code, sets resource limits, ``no_new_privs``, a landlock domain (reads anywhere;
writes only in the child's folders; signals and abstract sockets only inside the domain), a
uid of its own when kbx runs as root, and a seccomp filter of syscalls no kbx child needs.
``prepare`` and ``release`` run in the trusted parent around each child; ``probe`` says which
layers this machine gives. A layer the machine lacks is skipped and reported, never fatal,
unless a caller asks for it (``require``).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from kbx.evaluate import layers
from kbx.evaluate.layers import MS_NODEV, MS_NOEXEC, MS_NOSUID, MS_PRIVATE, MS_REC, libc

NAMESPACES = {"pid": 0x20000000, "net": 0x40000000, "mount": 0x00020000, "ipc": 0x08000000}
CLONE_NEWUSER = 0x10000000
LAYERS = ("pid", "net", "mount", "ipc", "uid", "landlock", "seccomp", "rlimits")
UID_BASE, UID_COUNT = 200_000, 65_536  # a private range: no account on a host uses these
PROBE_UID = UID_BASE - 1
UID_LOCKS = Path("/run/kbx-uids")  # a flock per uid in use, across kbx processes
# AS 16 GiB, on the CPU only: CUDA reserves far more address space than it uses, so on cuda it
# stays unlimited.  NPROC 512 processes and threads of the child's own uid; NOFILE 1024;
# FSIZE 16 GiB (as sandbox.MAX_FILE_BYTES); CPU 3600 s, a backstop behind the parent's deadlines.
LIMITS = {"as": 16 << 30, "nproc": 512, "nofile": 1024, "fsize": 16 << 30, "cpu": 3600}
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
_probe_lock = threading.Lock()


@dataclass(frozen=True)
class Level:
    """The layers this machine gives a child, and those it lacks."""

    layers: tuple[str, ...]
    missing: tuple[str, ...]

    @property
    def name(self) -> str:
        return "full" if not self.missing else "partial" if self.layers else "none"


class SandboxUnavailable(RuntimeError):
    """A sandbox layer was required and is not there."""


@functools.cache
def isolate() -> tuple[str, ...]:
    """Move what follows into new namespaces under a kbx init; returns only in the worker, with
    the namespace layers it got (for ``restrict``).

    A new pid namespace holds only the caller's children, so the caller S unshares and forks X
    (pid 1 there), X forks the worker W (pid 2, in a session of its own) and this returns in
    W. S and X wait, then end as W ended (its exit code, or its signal raised again), never
    returning into the caller's code; X's end kills all that is left in the namespace. Where
    unshare is refused this returns at once, having done nothing: no layers.  A process is
    isolated once: a later call (W's, or a process W forks) returns the first call's layers."""
    root, uid, gid = os.geteuid() == 0, os.getuid(), os.getgid()
    flags = sum(NAMESPACES.values()) | (0 if root else CLONE_NEWUSER)
    if libc.unshare(ctypes.c_int(flags)) != 0:
        return ()
    got = [*NAMESPACES, *([] if root else ["user"])]
    try:
        if not root:  # keep our ids; as their owner (a process that changed uid is not)
            libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
            Path("/proc/self/setgroups").write_text("deny")
            Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
            Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
        layers.mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing mounted here reaches the host
    except OSError:
        got.remove("mount")
    r, w = os.pipe()
    init = os.fork()
    if init:
        _end_as_worker(init, r, w)
    return _be_init(r, w, tuple(got))


def _quiet(keep: int) -> None:
    """In S and X: default signal handling, not dumpable (the worker cannot open their /proc
    files), no descriptors but stdio and ``keep``."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    os.closerange(3, keep)
    os.closerange(keep + 1, 1 << 20)


def _be_init(r: int, w: int, got: tuple[str, ...]) -> tuple[str, ...]:
    """X: mount a /proc of the namespace, fork W, reap every orphan, send W's status to S.
    Returns in W only, with the layers ``got`` (less ``mount`` where /proc was not mounted)."""
    os.close(r)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # S killed: X, and all below it
    try:
        if "mount" in got:
            layers.mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        got = tuple(n for n in got if n != "mount")
    try:
        worker = os.fork()
    except OSError:
        os._exit(70)
    if worker == 0:
        os.close(w)
        os.setsid()
        return got
    status = 70 << 8
    try:
        _quiet(w)
        while (found := os.wait())[0] != worker:
            pass
        status = found[1]
        os.write(w, struct.pack("i", status))
    finally:
        os._exit(_exit_code(status))


def _exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return min(code if code >= 0 else 128 - code, 255)


def _end_as_worker(init: int, r: int, w: int) -> NoReturn:
    """S: wait for X, then end with W's status (X's own, where X was killed first)."""
    status = 70 << 8
    try:
        os.close(w)
        _quiet(r)
        status = os.waitpid(init, 0)[1]
        if len(data := os.read(r, 4)) == 4:
            status = struct.unpack("i", data)[0]
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            with contextlib.suppress(OSError, ValueError):  # SIGKILL's cannot be set
                signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
            os.kill(os.getpid(), sig)
    finally:
        os._exit(_exit_code(status))


class Settings(dict[str, Any]):
    """A child's settings for ``restrict`` (the JSON the child gets), and the parent's hold on
    the child's uid (``lock``: the descriptor of its flock, -1 for none), which stays out of the
    JSON: ``release`` lets it go."""

    lock = -1


def prepare(
    workdir: Path, writable: Sequence[Path], device: str, shared: Sequence[Path] = ()
) -> Settings:
    """In the parent, before the child starts: the child's settings for ``restrict`` (JSON).
    As root, a uid of its own owns ``workdir`` and ``writable`` (fresh folders, made if
    missing, chowned whole).  ``shared``: files or folders it may write too, not chowned
    (their modes must let other uids in: lock files)."""
    uid, lock = take_uid() if os.geteuid() == 0 else (None, -1)
    for path in (workdir, *writable):
        path.mkdir(parents=True, exist_ok=True)  # a folder landlock can name
        for top, _, files in os.walk(path) if uid is not None else ():
            for name in (top, *(os.path.join(top, f) for f in files)):
                os.chown(name, uid, uid, follow_symlinks=False)  # type: ignore[arg-type]
    paths = [str(p) for p in (workdir, *writable, *shared)]
    settings = Settings(uid=uid, gid=uid, writable=paths, device=device, limits=dict(LIMITS))
    settings.lock = lock
    return settings


def release(settings: dict[str, Any] | None) -> None:
    """After the child has ended: its uid is free for another (once; again does nothing)."""
    if isinstance(settings, Settings) and settings.lock >= 0:
        lock, settings.lock = settings.lock, -1
        os.close(lock)


@functools.cache
def uid_locks() -> Path:
    """The folder of the uids' flocks: ``UID_LOCKS``, shared by every kbx process, or where it
    cannot be used a folder of this process's own (uids then unique within it only)."""
    with contextlib.suppress(OSError):
        UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
        if os.access(UID_LOCKS, os.W_OK | os.X_OK):
            return UID_LOCKS
    return Path(tempfile.mkdtemp(prefix="kbx-uids-"))


def take_uid() -> tuple[int, int]:
    """The lowest uid of the range that no child of any kbx process holds, and the descriptor
    of the flock that holds it now (each open has a flock of its own, so the threads of one
    process exclude each other too)."""
    folder = uid_locks()
    for uid in range(UID_BASE, UID_BASE + UID_COUNT):
        fd = os.open(folder / str(uid), os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return uid, fd
    raise RuntimeError("no free uid for a child")


def restrict(settings: dict[str, Any] | None, isolated: Sequence[str]) -> tuple[str, ...]:
    """In the worker, before any candidate code: every layer this machine gives (None: none);
    the layers applied.  ``isolated``: the layers ``isolate`` gave.  A layer that fails is
    skipped; ``settings["require"]``: raise."""
    if settings is None:
        return ()
    writable, device = settings["writable"], settings["device"]
    own = "mount" in isolated
    drop = settings.get("uid") is not None and os.geteuid() == 0 and layers.revealed(writable, own)
    steps = {
        "rlimits": lambda: layers.rlimits(settings["limits"], device, drop),
        "landlock": lambda: layers.landlock(writable, device),
        "uid": lambda: layers.drop_ids(settings if drop else None),
        "seccomp": lambda: layers.seccomp(device),
    }
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # landlock and seccomp need it
    applied = []
    for name, step in steps.items():
        with contextlib.suppress(OSError, ValueError, AttributeError):
            if step():
                applied.append(name)
    lacking = [n for n in LAYERS if n not in (*isolated, *applied)]
    if settings.get("require") and lacking:
        raise SandboxUnavailable(f"kbx: sandbox layers not applied: {', '.join(lacking)}")
    return tuple(applied)


def expected() -> tuple[str, ...]:
    """The layers of a full sandbox here: a user namespace only where kbx is not root."""
    return LAYERS if os.geteuid() == 0 else ("user", *LAYERS)


def probe() -> Level:
    """The layers this machine gives, found once per process by trying them all in a
    throwaway interpreter (forking a threaded parent is unsafe); one line on stderr names
    what is missing."""
    with _probe_lock:  # one probe, and one line, however many threads ask at once
        return _probe()


@functools.cache
def _probe() -> Level:
    got: list[str] = []
    cmd = [sys.executable, "-m", "kbx.evaluate.confine", "--probe"]
    root = str(Path(__file__).resolve().parents[2])  # kbx's source, installed or not
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": root}
    with contextlib.suppress(OSError, ValueError, IndexError, subprocess.SubprocessError):
        out = subprocess.run(cmd, capture_output=True, timeout=30, check=True, env=env).stdout
        got = json.loads(out.splitlines()[-1])
    want = expected()
    level = Level(tuple(n for n in want if n in got), tuple(n for n in want if n not in got))
    if level.missing:
        sys.stderr.write(f"kbx: sandbox {level.name}: missing {', '.join(level.missing)}\n")
    return level


def require(level: Level | None = None) -> None:
    """For ``--require-sandbox``: raise, naming what is missing, unless the sandbox is full."""
    if (level := level or probe()).missing:
        raise SandboxUnavailable(f"sandbox required, but missing: {', '.join(level.missing)}")


def _probe_child() -> int:
    isolated = isolate()
    uid = PROBE_UID if os.geteuid() == 0 else None
    settings: dict[str, Any] = {"uid": uid, "gid": uid, "writable": [], "device": "cpu"}
    got = [*isolated, *restrict({**settings, "limits": LIMITS}, isolated)]
    print(json.dumps([n for n in got if n != "pid" or os.getpid() == 2]), flush=True)
    return 0


if __name__ == "__main__" and sys.argv[1:] == ["--probe"]:
    sys.exit(_probe_child())
