"""A child's working folder as the parent holds it: the parent never reads a path the child could
have made by name.

The folder is, where the machine allows it (root, a mount namespace for the child, Linux's mount
API), a filesystem of its own: a tmpfs of a fixed size, made with ``fsopen``/``fsmount`` and
mounted nowhere on the host.  The parent reaches it through the mount's descriptor alone; the
child attaches it over its working folder's path in its own mount namespace (``layers.attach``),
so no other process sees it, a candidate that fills it fills only its own disk, and it is gone
once the parent closes its descriptor and the child's namespace ends (a killed parent leaves no
mount behind).  Elsewhere the folder is the plain one ``mkdtemp`` made, opened once by the parent.

Either way every read goes through descriptors the parent opened itself: the child's stdout and
stderr are files the parent created and keeps open (the child gets them as its descriptors 1
and 2), read with ``pread``, never reopened; an output file is opened relative to the folder's
descriptor without following links (``O_NOFOLLOW | O_NONBLOCK``: a FIFO cannot block the parent)
and checked on the descriptor (a regular file, owned by the child's uid: ``outputs.read_case``).
``tampered`` says whether a name kbx made in the folder (``stdout.txt``, ``stderr.txt``) now
names something else: a link, a FIFO, another file, nothing; the sandbox makes that
``forbidden``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import stat
import tempfile
from pathlib import Path

from kbx.sandbox.wire.confinement import (
    FOLDER_INODES,
    FSCONFIG,
    FSCONFIG_CMD_CREATE,
    FSCONFIG_SET_STRING,
    FSMOUNT,
    FSOPEN,
    MOUNT_ATTRS,
)

STREAMS = ("stdout.txt", "stderr.txt")
TAIL_BYTES = 64 << 10  # of a stream, for a verdict's reason

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class Folder:
    """A child's working folder (``path``, as the child sees it) and the parent's descriptors:
    ``fd``, the folder's contents (the private tmpfs's root where there is one), and the
    streams'.  ``mount``: the detached tmpfs's descriptor the child attaches at ``path``
    (-1: none, the folder is ``path`` itself); ``size``: its size in bytes; ``owner``: the
    child's uid, which owns the folder (``own``) and every file the child writes."""

    def __init__(self, root: str | None, size: int, private: bool) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="kbx-", dir=root))
        self.size, self.owner = size, os.getuid()
        self.streams: dict[str, int] = {}
        self.fd = -1
        self.mount = tmpfs(size) if private else -1
        try:
            if self.mount >= 0:
                self.fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY, dir_fd=self.mount)
            else:
                self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            self.streams = {name: self.create(name, os.O_RDWR) for name in STREAMS}
        except BaseException:
            self.close()
            raise

    @property
    def private(self) -> bool:
        return self.mount >= 0

    @property
    def identity(self) -> tuple[int, int]:
        """(device, inode) of the private tmpfs's root: how the child finds its descriptor."""
        info = os.fstat(self.fd)
        return info.st_dev, info.st_ino

    def own(self, uid: int | None) -> None:
        """The folder is the child's (its ``uid``: None, kbx's own)."""
        if uid is not None:
            self.owner = uid
            os.chown(self.fd, uid, uid)

    def write_job(self, name: str, data: bytes) -> None:
        """The job file, which the child reads (and removes) before it attaches its filesystem:
        beside it, at the folder's path (only root may enter there), where it has one."""
        if not self.private:
            return self.write(name, data)
        fd = os.open(self.path / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with open(fd, "wb") as f:
            f.write(data)
        return None

    def create(self, name: str, mode: int = os.O_WRONLY) -> int:
        """A new file of the folder, opened by the parent (never one the child made)."""
        return os.open(
            name,
            mode | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o644,
            dir_fd=self.fd,
        )

    def write(self, name: str, data: bytes) -> None:
        fd = self.create(name)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    def mkdir(self, name: str) -> None:
        """A folder of the child's own (its uid, 0700)."""
        os.mkdir(name, 0o700, dir_fd=self.fd)
        os.chown(name, self.owner, self.owner, dir_fd=self.fd, follow_symlinks=False)

    def tail(self, name: str) -> str:
        """The end of a stream, read through the parent's own descriptor."""
        fd = self.streams[name]
        size = os.fstat(fd).st_size
        start = max(0, size - TAIL_BYTES)
        return os.pread(fd, size - start, start).decode(errors="replace")

    def tampered(self) -> str | None:
        """What became of a stream's name, if it no longer names the file kbx made: a symbolic
        link, a FIFO, another file or nothing (read without following or opening it)."""
        for name, fd in self.streams.items():
            made = os.fstat(fd)
            try:
                now = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            except FileNotFoundError:
                return f"removed {name} (kbx's file) from its folder"
            if (now.st_dev, now.st_ino) != (made.st_dev, made.st_ino):
                return f"replaced {name} (kbx's file) with {kind(now.st_mode)}"
        return None

    def open(self, name: str) -> int:
        """A descriptor of the folder's file ``name``, opened without following a link and
        without blocking on a FIFO (``OSError`` otherwise); the caller checks what it is."""
        return os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self.fd
        )

    def close(self) -> None:
        """Close every descriptor (the private tmpfs goes with the last one, once the child's
        namespace has ended) and remove the folder."""
        for fd in [*self.streams.values(), self.fd, self.mount]:
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.streams, self.fd, self.mount = {}, -1, -1
        shutil.rmtree(self.path, ignore_errors=True)


def kind(mode: int) -> str:
    """What a file's mode says it is, for a verdict's reason."""
    for test, name in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return name
    return "another file"


def tmpfs(size: int, inodes: int = FOLDER_INODES) -> int:
    """A new tmpfs of ``size`` bytes and at most ``inodes`` files and folders (its root 0700),
    mounted nowhere: its mount's descriptor, or -1 where the machine does not allow one (not
    root, an old kernel)."""
    fs = int(_libc.syscall(FSOPEN, b"tmpfs", 1))  # FSOPEN_CLOEXEC
    if fs < 0:
        return -1
    try:
        options = {"size": str(max(size, 1 << 20)), "nr_inodes": str(inodes), "mode": "0700"}
        for key, value in options.items():
            if _libc.syscall(FSCONFIG, fs, FSCONFIG_SET_STRING, key.encode(), value.encode(), 0):
                return -1
        if _libc.syscall(FSCONFIG, fs, FSCONFIG_CMD_CREATE, None, None, 0):
            return -1
        return int(_libc.syscall(FSMOUNT, fs, 1, MOUNT_ATTRS))  # FSMOUNT_CLOEXEC
    finally:
        os.close(fs)
