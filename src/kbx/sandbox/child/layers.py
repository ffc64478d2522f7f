"""The confinement layers ``confine.restrict`` applies in the candidate's worker, one function
each: resource limits, the tmpfs cover that lets a uid of its own reach kbx's folders, landlock,
the uid drop and seccomp; and the libc calls they and ``confine.isolate`` make.

Each returns whether its layer holds (or raises ``OSError``): a layer the machine does not give
is skipped and named by its caller, never fatal here.  docs/design/sandbox.md gives the threat
each stops and the test that proves it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import glob
import os
import resource
import stat
import struct
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbx.sandbox.wire.confinement import MOVE_MOUNT, MOVE_MOUNT_F_EMPTY_PATH, SHM_INODES

try:  # imported once, in the parent or fork server: it runs ``ldconfig`` to find libc
    import pyseccomp
except (ImportError, OSError, RuntimeError):  # no libseccomp: that layer is missing
    pyseccomp = None

CLONE_THREAD = 0x00010000
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
DENIED = (  # EPERM: debugging, mounts, namespaces, keys, kernel modules, bpf, perf, uffd, uring
    "ptrace process_vm_readv process_vm_writev process_madvise pidfd_getfd kcmp mount umount2 "
    "pivot_root fsopen fsmount fsconfig fspick move_mount open_tree mount_setattr setns unshare "
    "bpf keyctl add_key request_key kexec_load kexec_file_load init_module finit_module "
    "delete_module perf_event_open reboot swapon swapoff open_by_handle_at userfaultfd "
    "io_uring_setup io_uring_enter io_uring_register"
).split()
# ENOSYS on the CPU (as on a kernel without them, so that a library falls back to a file of
# /dev/shm, as asmjit in torch's CPU library does): anonymous memory files hold host memory that
# neither the address-space limit nor any filesystem's size counts (tests/exploits/memfd_fill).
# Left alone on the GPU, where no address-space limit holds a CUDA process and NVIDIA's driver
# makes such files itself (docs/design/sandbox.md, GPU notes)
UNCOUNTED_MEMORY = ("memfd_create", "memfd_secret")
# ENOLCK (as on a filesystem without locks), on the CPU: a lock needs only a descriptor open for
# reading, and every child's locks on one inode meet, so lock states on files every child can read
# (a package's sources) carry bits between children (tests/exploits/flock_relay).  flock, and
# fcntl's F_GETLK, F_SETLK, F_SETLKW and their open-file-description forms; on the GPU the
# children lock the GPU lock's files themselves
LOCKS_FCNTL = tuple(
    getattr(fcntl, n)
    for n in ("F_GETLK", "F_SETLK", "F_SETLKW", "F_OFD_GETLK", "F_OFD_SETLK", "F_OFD_SETLKW")
)
CLONE_NS_BITS = (0x20000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
LL_CREATE, LL_ADD, LL_RESTRICT = 444, 445, 446  # landlock's syscalls, on every architecture
LL_WRITES = 0x2 | 0x1FF0  # WRITE_FILE; REMOVE_DIR, REMOVE_FILE, MAKE_CHAR ... MAKE_SYM
LL_BY_ABI = ((2, 1 << 13), (3, 1 << 14), (5, 1 << 15))  # REFER, TRUNCATE, IOCTL_DEV
LL_FILE = 0x7 | 1 << 14 | 1 << 15  # the rights a rule on a file may carry
LL_TCP, LL_SCOPES = 0x3, 0x3  # BIND|CONNECT_TCP (ABI 4); SCOPE_SIGNAL|ABSTRACT_UNIX (ABI 6)
AT_FDCWD, MNT_DETACH = -100, 2

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def mount(source: str | None, target: str, kind: str | None, flags: int, data: str = "") -> None:
    args = [s.encode() if s else None for s in (source, target, kind, data)]
    if libc.mount(args[0], args[1], args[2], ctypes.c_ulong(flags), args[3]) != 0:
        raise OSError(ctypes.get_errno(), f"mount {target}: {os.strerror(ctypes.get_errno())}")


def needed(writable: Sequence[str]) -> list[str]:
    """The folders a worker of another uid uses: Python's, kbx's, the import path, its own."""
    core = (sys.prefix, sys.base_prefix, str(Path(__file__).resolve().parents[3]))
    paths = {os.path.realpath(p) for p in (*core, *sys.path, *writable) if p}
    paths = {p if os.path.isdir(p) else os.path.dirname(p) for p in paths if os.path.exists(p)}
    return sorted(p for p in paths if not any(p.startswith(q + os.sep) for q in paths))


def closed_ancestor(path: str) -> str | None:
    """The outermost folder above ``path`` that other users cannot enter, if any."""
    for parent in reversed(Path(path).parents):
        if str(parent) != "/" and not os.stat(parent).st_mode & stat.S_IXOTH:
            return str(parent)
    return None


def revealed(writable: Sequence[str], own_mounts: bool) -> bool:
    """Whether a worker of another uid reaches all ``needed`` folders, once those below a
    folder it cannot enter (a pyenv in /root) are bound back onto an empty tmpfs over that
    folder, in the worker's own mount namespace (``own_mounts``: there is one), before landlock
    forbids mounts."""
    hidden: dict[str, list[str]] = {}
    for path in needed(writable) if own_mounts else ():
        if (closed := closed_ancestor(path)) is not None:
            hidden.setdefault(closed, []).append(path)
    with contextlib.suppress(OSError):
        for folder, paths in hidden.items():
            bind_back(folder, paths)
    return not any(closed_ancestor(p) for p in needed(writable))


def bind_back(
    folder: str,
    paths: list[str],
    data: str = "mode=0755,size=1m",
    flags: int = MS_NOSUID | MS_NODEV,
) -> None:
    """Cover ``folder`` with an empty tmpfs (``data``: its options), then bind ``paths`` (below
    it) back where they were."""
    fds = [os.open(p, os.O_PATH | os.O_CLOEXEC) for p in paths]  # before they are covered
    try:
        mount("tmpfs", folder, "tmpfs", flags, data)
        for path, fd in zip(paths, fds, strict=True):
            os.makedirs(path, mode=0o755, exist_ok=True)
            mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
    finally:
        for fd in fds:
            os.close(fd)


def own_disks(scratch: dict[str, Any] | None, writable: Sequence[str], shm_bytes: int) -> bool:
    """In the worker's own mount namespace, before landlock: a /dev/shm of its own (a tmpfs of
    ``shm_bytes``; its ``writable`` folders there bound back), and, with ``scratch`` (the parent
    made the working folder a tmpfs mounted nowhere: its ``path``, and the ``dev`` and ``ino``
    of its root, by which its descriptor is found among those the parent passed), that tmpfs
    attached over the folder's path, which becomes the working folder.  Nothing mounted here
    reaches the host (``isolate`` made every mount private)."""
    here = os.getcwd()
    attach = scratch["path"] if scratch is not None else None
    if os.path.isdir("/dev/shm"):
        keep = [
            p for p in writable if p.startswith("/dev/shm/") and p != attach and os.path.exists(p)
        ]
        try:
            data = f"mode=1777,size={shm_bytes},nr_inodes={SHM_INODES}"
            bind_back("/dev/shm", keep, data, MS_NOSUID | MS_NODEV | MS_NOEXEC)
        except OSError:  # left as it was (landlock still keeps writes out): nothing half done
            with contextlib.suppress(OSError):
                libc.umount2(b"/dev/shm", MNT_DETACH)
    if scratch is None:
        with contextlib.suppress(OSError):
            os.chdir(here)  # the same folder, through its mount here
        return True
    fd = find_descriptor(scratch["dev"], scratch["ino"])
    try:
        path = scratch["path"]
        os.makedirs(path, mode=0o700, exist_ok=True)  # below the new /dev/shm, say
        empty = ctypes.c_uint(MOVE_MOUNT_F_EMPTY_PATH)
        if libc.syscall(MOVE_MOUNT, fd, b"", AT_FDCWD, path.encode(), empty) != 0:
            raise OSError(
                ctypes.get_errno(), f"attach the working folder: {os.strerror(ctypes.get_errno())}"
            )
    finally:
        os.close(fd)
    os.chdir(path)
    return True


def find_descriptor(dev: int, ino: int) -> int:
    """The open descriptor of the folder whose device and inode are these."""
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError, ValueError):
            info = os.fstat(int(name))
            if stat.S_ISDIR(info.st_mode) and (info.st_dev, info.st_ino) == (dev, ino):
                return int(name)
    raise OSError(errno.EBADF, "the working folder's filesystem was not handed over")


def rlimits(limits: dict[str, int], device: str, per_uid: bool) -> bool:
    """Soft = hard: the child cannot raise them.  AS on the CPU only: CUDA reserves far more
    address space than it uses, so an AS limit would fail its context on ``cuda``."""
    wanted = {resource.RLIMIT_CORE: 0, resource.RLIMIT_FSIZE: limits["fsize"]}
    wanted.update({resource.RLIMIT_NOFILE: limits["nofile"], resource.RLIMIT_CPU: limits["cpu"]})
    if device == "cpu":
        wanted[resource.RLIMIT_AS] = limits["as"]
    if per_uid:  # counted per real uid: a shared uid would count the host's processes too
        wanted[resource.RLIMIT_NPROC] = limits["nproc"]
    for which, value in wanted.items():
        hard = resource.getrlimit(which)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))
    return True


def landlock(writable: Sequence[str], device: str) -> bool:
    abi = int(libc.syscall(LL_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1)))
    fs = LL_WRITES | sum(bit for least, bit in LL_BY_ABI if abi >= least)
    attr = struct.pack("QQQ", fs, LL_TCP * (abi >= 4), LL_SCOPES * (abi >= 6))
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = int(libc.syscall(LL_CREATE, attr, ctypes.c_size_t(size), 0)) if abi > 0 else -1
    if ruleset < 0:
        return False
    devices = [*DEVICES, *(glob.glob("/dev/nvidia*") if device.startswith("cuda") else [])]
    # the CUDA driver writes below its own process's /proc folder and fails to start (error
    # 304) without it (docs/design/sandbox.md); the guard keeps candidates from /proc/*/mem
    own = [f"/proc/{os.getpid()}"] if device.startswith("cuda") else []
    try:
        rules = [*((p, fs) for p in [*writable, *own]), *((d, fs & LL_FILE) for d in devices)]
        for path, rights in rules:
            with contextlib.suppress(FileNotFoundError):
                allow(ruleset, path, rights)
        return int(libc.syscall(LL_RESTRICT, ruleset, ctypes.c_uint32(0))) == 0
    finally:
        os.close(ruleset)


def allow(ruleset: int, path: str, rights: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = struct.pack("=Qi", rights if os.path.isdir(path) else rights & LL_FILE, fd)
        if libc.syscall(LL_ADD, ruleset, 1, rule, ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock rule for {path}")
    finally:
        os.close(fd)


def drop_ids(settings: dict[str, Any] | None) -> bool:
    """The child's own uid and gid, no groups, and umask 077: what it makes is its own (its
    kernel cache, in its folder, is no other child's; the parent reads as root).  Without one
    (not root, or its folders out of its reach): no capabilities at least (those of root, or of
    a user namespace)."""
    if settings is None:
        libc.capset(struct.pack("Ii", 0x20080522, 0), ctypes.create_string_buffer(24))
        return False
    os.setgroups([])
    os.setresgid(settings["gid"], settings["gid"], settings["gid"])
    os.setresuid(settings["uid"], settings["uid"], settings["uid"])
    os.umask(0o077)
    return True


def seccomp(device: str = "cuda", locks: bool = False) -> bool:
    """Deny (EPERM) ``DENIED``, and clone with a namespace flag; clone3 is ENOSYS (its flags
    lie in memory a filter cannot read; glibc then falls back to clone).  On the CPU
    ``UNCOUNTED_MEMORY``'s anonymous memory files are ENOSYS too, and, since nothing
    kbx runs makes a process (the interpreter runs kernels in this one), a clone without
    CLONE_THREAD, fork, vfork and exec are denied too: no helper process works outside the
    recorded one (``opcheck``), no fork bomb or orphan can start, and file locks
    (``LOCKS_FCNTL``) are ENOLCK unless the child has ``locks`` to take (a GPU lock's files).
    On the GPU Triton runs ``ptxas``, so processes stay possible there (the pid namespace
    still holds them)."""
    if pyseccomp is None:
        return False
    sc: Any = pyseccomp
    filt = sc.SyscallFilter(sc.ALLOW)
    filt.set_attr(sc.Attr.CTL_TSYNC, 1)  # every thread: a spare's CUDA threads too
    for nr in (sc.resolve_syscall(sc.Arch.NATIVE, name) for name in DENIED):
        if nr >= 0:  # not on this architecture: negative
            filt.add_rule(sc.ERRNO(errno.EPERM), nr)
    for bit in CLONE_NS_BITS:
        filt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, bit, bit))
    filt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    if device == "cpu":
        for nr in (sc.resolve_syscall(sc.Arch.NATIVE, name) for name in UNCOUNTED_MEMORY):
            if nr >= 0:
                filt.add_rule(sc.ERRNO(errno.ENOSYS), nr)
        for name in ("fork", "vfork", "execve", "execveat"):
            filt.add_rule(sc.ERRNO(errno.EPERM), name)
        for cmd in () if locks else LOCKS_FCNTL:
            filt.add_rule(sc.ERRNO(errno.ENOLCK), "fcntl", sc.Arg(1, sc.EQ, cmd))
        if not locks:
            filt.add_rule(sc.ERRNO(errno.ENOLCK), "flock")
        filt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
    filt.load()
    return True
