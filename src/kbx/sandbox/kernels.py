"""Compiled kernels between children: each child's Triton cache is its own, and a store only the
parent writes carries them to later children of the same code and task.

A child compiles into ``triton-cache`` in its own folder (its uid, mode 0700, on its own filesystem
where it has one): no other child can read it, plant a kernel or an autotuning choice in it, or
fill it. Warm re-evaluations still find their kernels: the run's Triton cache folder (or
``--triton-cache``'s) is the parent's store, a folder per task and code (``entry``), that no child
can reach. Before a child starts, ``fill`` copies its entry into the child's cache (each kernel's
group file pointed at the copies: Triton finds a kernel by absolute paths); after a child
that ran to its end, ``keep`` copies back what is new there: regular files only (read through
descriptors, never following a link), named as Triton names its files, at most two levels deep,
``MAX_BYTES`` in all and never into the store disk's last ``RESERVE``. What a child leaves in its
cache thus reaches only a later evaluation of the same code for the same task, never another
candidate or another task (two tasks given one file share nothing). A failure to read or write the
store (a full disk) costs the warm start, never the run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from kbx.sandbox.folder import Folder

CACHE = "triton-cache"  # the child's own, in its folder
NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.=+-]{0,199}$")  # Triton's: hashes and kernel names
MAX_BYTES = 64 << 20  # copied back from one child
RESERVE = 1 << 30  # the store's disk keeps this much free: a child's kernels never fill it
MAX_FILES = 4096
GROUP = "__grp__"  # Triton's index of one kernel's files (``regroup``)
CHOICE = ".autotune.json"  # Triton's file of one autotuning's config timings (``keep``)


def entry(store: Path | None, task_id: str, code: str) -> Path | None:
    """The store's folder for this code on this task (None: no store)."""
    if store is None:
        return None
    return store / hashlib.sha256(f"{task_id}\n{code}".encode()).hexdigest()[:24]


def fill(source: Path | None, folder: Folder) -> None:
    """The child's own cache in ``folder``, with the store's kernels for its code and task."""
    folder.mkdir(CACHE)
    if source is None or not source.is_dir():
        return
    with contextlib.suppress(OSError):  # a store that cannot be read: a cold start
        for top in sorted(os.listdir(source)):
            if not NAME.match(top):
                continue
            here = source / top
            if here.is_dir() and not here.is_symlink():
                folder.mkdir(f"{CACHE}/{top}")
                names = [n for n in sorted(os.listdir(here)) if NAME.match(n)]
                for name in names:
                    if (here / name).is_file():
                        data = (here / name).read_bytes()
                        if name.startswith(GROUP):
                            data = regroup(data, folder.path / CACHE / top, names)
                        folder.write(f"{CACHE}/{top}/{name}", data)
            elif here.is_file() and not here.is_symlink():
                folder.write(f"{CACHE}/{top}", here.read_bytes())


def regroup(data: bytes, here: Path, names: list[str]) -> bytes:
    """A Triton group file (``__grp__<kernel>.json``: the absolute path of each of a kernel's
    files) pointed at the copies in ``here``: Triton finds a kernel only where its group's
    paths exist, and the child that wrote them had another folder.  Only names of files beside
    it are kept; a group that is not Triton's shape comes out empty (the kernel compiles)."""
    try:
        paths = json.loads(data)["child_paths"]
        kept = {
            str(kind): str(here / Path(path).name)
            for kind, path in paths.items()
            if isinstance(path, str) and Path(path).name in names
        }
    except (ValueError, KeyError, TypeError, AttributeError):
        kept = {}
    return json.dumps({"child_paths": kept}).encode()


def keep(folder: Folder, target: Path | None, choices: bool = True) -> int:
    """Copy what the child added to its cache into the store's ``target``; the bytes copied.
    Nothing the child made is followed, opened by name or trusted beyond being bytes.  Without
    ``choices`` (a run that times nothing), no autotuning choice is kept: its configs were
    benchmarked briefly beside other work (``launches.lock_autotuner``), and a later timed run
    of the same code must choose again, alone on the GPU."""
    if target is None:
        return 0
    budget = [MAX_BYTES, MAX_FILES]
    copied = 0
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        budget[0] = min(MAX_BYTES, shutil.disk_usage(target.parent).free - RESERVE)
        cache = os.open(CACHE, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder.fd)
        try:
            copied = keep_folder(cache, target, budget, depth=1, choices=choices)
        finally:
            os.close(cache)
    return copied


def keep_folder(fd: int, target: Path, budget: list[int], depth: int, choices: bool = True) -> int:
    copied = 0
    for name in sorted(os.listdir(fd)):
        if not NAME.match(name) or budget[1] <= 0 or (not choices and name.endswith(CHOICE)):
            continue
        budget[1] -= 1
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode) and depth < 2:
            sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            try:
                copied += keep_folder(sub, target / name, budget, depth + 1, choices)
            finally:
                os.close(sub)
        elif stat.S_ISREG(info.st_mode) and not (target / name).exists():
            copied += keep_file(fd, name, target, budget)
    return copied


def keep_file(fd: int, name: str, target: Path, budget: list[int]) -> int:
    """One regular file of the child's cache, copied into the store (whole, or not at all)."""
    src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    try:
        info = os.fstat(src)
        if not stat.S_ISREG(info.st_mode) or info.st_size > budget[0]:
            return 0
        data = os.pread(src, info.st_size, 0)
    finally:
        os.close(src)
    budget[0] -= len(data)
    target.mkdir(parents=True, exist_ok=True, mode=0o700)
    handle, tmp = tempfile.mkstemp(dir=target, prefix=".kbx-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(tmp, target / name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return len(data)


def store_root(store: Path | None) -> Path | None:
    """The store's folder made, root's own (0700: no child can enter it); None without one or
    where it cannot be made."""
    if store is None:
        return None
    try:
        store.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return None
    return store


def stored_bytes(entry: Path | None) -> int:
    """The bytes of kernels the store holds for one code on one task (0: none, or unreadable)."""
    total = 0
    if entry is None:
        return 0
    with contextlib.suppress(OSError):
        for root, _, files in os.walk(entry):
            total += sum(os.lstat(os.path.join(root, f)).st_size for f in files)
    return total
