"""Confinement of a candidate's child, the parent's part: the settings each child confines itself
with (``prepare``: a uid of its own owning its folders, the paths it may write, its limits),
their release when it ends, the run folder opened to the children's uids, and ``probe``: which
layers this machine gives, found once per process in a throwaway interpreter. The child applies
them itself (``kbx.sandbox.child.confine``: namespaces, landlock, seccomp, a uid, limits);
docs/design/sandbox.md gives the threat each layer stops. A layer the machine lacks is skipped
and reported, never fatal, unless a caller asks for it (``require``).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbx.sandbox.wire.confinement import (
    LAYERS,
    LIMITS,
    UID_BASE,
    UID_COUNT,
    SandboxUnavailable,
)

__all__ = ["LAYERS", "LIMITS", "Level", "SandboxUnavailable", "prepare", "probe", "release"]

UID_LOCKS = Path("/run/kbx-uids")  # a flock per uid in use, across kbx processes
_probe_lock = threading.Lock()


@dataclass(frozen=True)
class Level:
    """The layers this machine gives a child, and those it lacks."""

    layers: tuple[str, ...]
    missing: tuple[str, ...]

    @property
    def name(self) -> str:
        return "full" if not self.missing else "partial" if self.layers else "none"


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
    settings["locks"] = bool(shared)  # the GPU lock's files: the child flocks them
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
    cmd = [sys.executable, "-m", "kbx.sandbox.child.confine", "--probe"]
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


def open_run_folder(folder: Path | None) -> None:
    """Let the children's uids into ``folder``, the run folder where they open the GPU lock's
    files and compile into the Triton cache: as root, kbx runs each child under a uid of its
    own, and a folder ``mkdtemp`` made (0700) keeps them all out.  Only the folder's own mode
    changes, group and others gaining read and enter; its parents are ``revealed``'s."""
    if folder is None or os.geteuid() != 0:
        return
    with contextlib.suppress(OSError):
        mode = folder.stat().st_mode
        if mode & 0o055 != 0o055:
            folder.chmod(mode & 0o7777 | 0o055)
