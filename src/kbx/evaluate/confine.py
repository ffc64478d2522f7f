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
import errno
import fcntl
import glob
import json
import os
import resource
import signal
import stat
import struct
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

try:  # imported once, in the parent or fork server: it runs ``ldconfig`` to find libc
    import pyseccomp
except (ImportError, OSError, RuntimeError):  # no libseccomp: that layer is missing
    pyseccomp = None

NAMESPACES = {"pid": 0x20000000, "net": 0x40000000, "mount": 0x00020000, "ipc": 0x08000000}
CLONE_NEWUSER = 0x10000000
CLONE_THREAD = 0x00010000
LAYERS = ("pid", "net", "mount", "ipc", "uid", "landlock", "seccomp", "rlimits")
UID_BASE, UID_COUNT = 200_000, 65_536  # a private range: no account on a host uses these
PROBE_UID = UID_BASE - 1
UID_LOCKS = Path("/run/kbx-uids")  # a flock per uid in use, across kbx processes
# AS 16 GiB, on the CPU only: CUDA reserves far more address space than it uses, so on cuda it
# stays unlimited.  NPROC 512 processes and threads of the child's own uid; NOFILE 1024;
# FSIZE 16 GiB (as sandbox.MAX_FILE_BYTES); CPU 3600 s, a backstop behind the parent's deadlines.
LIMITS = {"as": 16 << 30, "nproc": 512, "nofile": 1024, "fsize": 16 << 30, "cpu": 3600}
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
DENIED = (  # EPERM: debugging, mounts, namespaces, keys, kernel modules, bpf, perf, uffd, uring
    "ptrace process_vm_readv process_vm_writev process_madvise pidfd_getfd kcmp mount umount2 "
    "pivot_root fsopen fsmount fsconfig fspick move_mount open_tree mount_setattr setns unshare "
    "bpf keyctl add_key request_key kexec_load kexec_file_load init_module finit_module "
    "delete_module perf_event_open reboot swapon swapoff open_by_handle_at userfaultfd "
    "io_uring_setup io_uring_enter io_uring_register"
).split()
CLONE_NS_BITS = (0x20000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
LL_CREATE, LL_ADD, LL_RESTRICT = 444, 445, 446  # landlock's syscalls, on every architecture
LL_WRITES = 0x2 | 0x1FF0  # WRITE_FILE; REMOVE_DIR, REMOVE_FILE, MAKE_CHAR ... MAKE_SYM
LL_BY_ABI = ((2, 1 << 13), (3, 1 << 14), (5, 1 << 15))  # REFER, TRUNCATE, IOCTL_DEV
LL_FILE = 0x7 | 1 << 14 | 1 << 15  # the rights a rule on a file may carry
LL_TCP, LL_SCOPES = 0x3, 0x3  # BIND|CONNECT_TCP (ABI 4); SCOPE_SIGNAL|ABSTRACT_UNIX (ABI 6)

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_state: dict[str, Any] = {"isolated": (), "refused": None}
_uids: dict[int, int] = {}  # uid in use -> its lock file's descriptor (-1: none)
_uid_lock, _probe_lock = threading.Lock(), threading.Lock()
_level: list[Level] = []


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


def _mount(source: str | None, target: str, kind: str | None, flags: int, data: str = "") -> None:
    args = [s.encode() if s else None for s in (source, target, kind, data)]
    if _libc.mount(args[0], args[1], args[2], ctypes.c_ulong(flags), args[3]) != 0:
        raise OSError(ctypes.get_errno(), f"mount {target}: {os.strerror(ctypes.get_errno())}")


def isolated() -> tuple[str, ...]:
    """The namespace layers ``isolate`` gave this process (empty: none, or not called)."""
    return tuple(_state["isolated"])


def isolate() -> None:
    """Move what follows into new namespaces under a kbx init; returns only in the worker.

    A new pid namespace holds only the caller's children, so the caller S unshares and forks X
    (pid 1 there), X forks the worker W (pid 2, in a session of its own) and this returns in
    W. S and X wait, then end as W ended (its exit code, or its signal raised again), never
    returning into the caller's code; X's end kills all that is left in the namespace. Where
    unshare is refused this returns at once, having done nothing (``isolated`` says so)."""
    root, uid, gid = os.geteuid() == 0, os.getuid(), os.getgid()
    flags = sum(NAMESPACES.values()) | (0 if root else CLONE_NEWUSER)
    if _state["isolated"]:
        return
    if _libc.unshare(ctypes.c_int(flags)) != 0:
        _state["refused"] = os.strerror(ctypes.get_errno())
        return
    got = [*NAMESPACES, *([] if root else ["user"])]
    try:
        if not root:  # keep our ids; as their owner (a process that changed uid is not)
            _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
            Path("/proc/self/setgroups").write_text("deny")
            Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
            Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
        _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing mounted here reaches the host
    except OSError:
        got.remove("mount")
    _state["isolated"] = tuple(got)
    r, w = os.pipe()
    init = os.fork()
    if init:
        _end_as_worker(init, r, w)
    _be_init(r, w)


def _quiet(keep: int) -> None:
    """In S and X: default signal handling, not dumpable (the worker cannot open their /proc
    files), no descriptors but stdio and ``keep``."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    os.closerange(3, keep)
    os.closerange(keep + 1, 1 << 20)


def _be_init(r: int, w: int) -> None:
    """X: mount a /proc of the namespace, fork W, reap every orphan, send W's status to S."""
    os.close(r)
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # S killed: X, and all below it
    try:
        if "mount" in _state["isolated"]:
            _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        _state["isolated"] = tuple(n for n in _state["isolated"] if n != "mount")
    try:
        worker = os.fork()
    except OSError:
        os._exit(70)
    if worker == 0:
        os.close(w)
        os.setsid()
        return
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


def prepare(
    workdir: Path, writable: Sequence[Path], device: str, shared: Sequence[Path] = ()
) -> dict[str, Any]:
    """In the parent, before the child starts: the child's settings for ``restrict`` (JSON).
    As root, a uid of its own owns ``workdir`` and ``writable`` (fresh folders, made if
    missing, chowned whole).  ``shared``: files or folders it may write too, not chowned
    (their modes must let other uids in: lock files)."""
    uid = _take_uid() if os.geteuid() == 0 else None
    for path in (workdir, *writable):
        path.mkdir(parents=True, exist_ok=True)  # a folder landlock can name
        for top, _, files in os.walk(path) if uid is not None else ():
            for name in (top, *(os.path.join(top, f) for f in files)):
                os.chown(name, uid, uid, follow_symlinks=False)  # type: ignore[arg-type]
    paths = [str(p) for p in (workdir, *writable, *shared)]
    return {"uid": uid, "gid": uid, "writable": paths, "device": device, "limits": dict(LIMITS)}


def release(settings: dict[str, Any] | None) -> None:
    """After the child has ended: its uid is free for another."""
    with _uid_lock:
        fd = _uids.pop((settings or {}).get("uid") or -1, -1)
    if fd >= 0:
        os.close(fd)


def _take_uid() -> int:
    """The lowest uid of the range that no child of any kbx process holds."""
    with _uid_lock:
        with contextlib.suppress(OSError):
            UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
        for uid in (u for u in range(UID_BASE, UID_BASE + UID_COUNT) if u not in _uids):
            try:
                fd = os.open(UID_LOCKS / str(uid), os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
            except OSError:  # no lock folder: unique in this process only
                fd = -1
            try:
                if fd >= 0:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            _uids[uid] = fd
            return uid
    raise RuntimeError("no free uid for a child")


def restrict(settings: dict[str, Any] | None) -> tuple[str, ...]:
    """In the worker, before any candidate code: every layer this machine gives (None: none);
    the layers applied.  A layer that fails is skipped; ``settings["require"]``: raise."""
    if settings is None:
        return ()
    writable, device = settings["writable"], settings["device"]
    drop = settings.get("uid") is not None and os.geteuid() == 0 and _revealed(writable)
    steps = {
        "rlimits": lambda: _rlimits(settings["limits"], device, drop),
        "landlock": lambda: _landlock(writable, device),
        "uid": lambda: _drop_ids(settings if drop else None),
        "seccomp": lambda: _seccomp(device),
    }
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # landlock and seccomp need it
    applied = []
    for name, step in steps.items():
        with contextlib.suppress(OSError, ValueError, AttributeError):
            if step():
                applied.append(name)
    lacking = [n for n in LAYERS if n not in (*isolated(), *applied)]
    if settings.get("require") and lacking:
        raise SandboxUnavailable(f"kbx: sandbox layers not applied: {', '.join(lacking)}")
    return tuple(applied)


def _needed(writable: Sequence[str]) -> list[str]:
    """The folders a worker of another uid uses: Python's, kbx's, the import path, its own."""
    core = (sys.prefix, sys.base_prefix, str(Path(__file__).resolve().parents[2]))
    paths = {os.path.realpath(p) for p in (*core, *sys.path, *writable) if p}
    paths = {p if os.path.isdir(p) else os.path.dirname(p) for p in paths if os.path.exists(p)}
    return sorted(p for p in paths if not any(p.startswith(q + os.sep) for q in paths))


def _closed_ancestor(path: str) -> str | None:
    """The outermost folder above ``path`` that other users cannot enter, if any."""
    for parent in reversed(Path(path).parents):
        if str(parent) != "/" and not os.stat(parent).st_mode & stat.S_IXOTH:
            return str(parent)
    return None


def _revealed(writable: Sequence[str]) -> bool:
    """Whether a worker of another uid reaches all ``_needed`` folders, once those below a
    folder it cannot enter (a pyenv in /root) are bound back onto an empty tmpfs over that
    folder, in the worker's own mount namespace, before landlock forbids mounts."""
    hidden: dict[str, list[str]] = {}
    for path in _needed(writable) if "mount" in isolated() else ():
        if (closed := _closed_ancestor(path)) is not None:
            hidden.setdefault(closed, []).append(path)
    with contextlib.suppress(OSError):
        for folder, paths in hidden.items():
            _bind_back(folder, paths)
    return not any(_closed_ancestor(p) for p in _needed(writable))


def _bind_back(folder: str, paths: list[str]) -> None:
    fds = [os.open(p, os.O_PATH | os.O_CLOEXEC) for p in paths]  # before they are covered
    try:
        _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
        for path, fd in zip(paths, fds, strict=True):
            os.makedirs(path, mode=0o755, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
    finally:
        for fd in fds:
            os.close(fd)


def _rlimits(limits: dict[str, int], device: str, per_uid: bool) -> bool:
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


def _landlock(writable: Sequence[str], device: str) -> bool:
    abi = int(_libc.syscall(LL_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1)))
    fs = LL_WRITES | sum(bit for least, bit in LL_BY_ABI if abi >= least)
    attr = struct.pack("QQQ", fs, LL_TCP * (abi >= 4), LL_SCOPES * (abi >= 6))
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = int(_libc.syscall(LL_CREATE, attr, ctypes.c_size_t(size), 0)) if abi > 0 else -1
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
                _allow(ruleset, path, rights)
        return int(_libc.syscall(LL_RESTRICT, ruleset, ctypes.c_uint32(0))) == 0
    finally:
        os.close(ruleset)


def _allow(ruleset: int, path: str, rights: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = struct.pack("=Qi", rights if os.path.isdir(path) else rights & LL_FILE, fd)
        if _libc.syscall(LL_ADD, ruleset, 1, rule, ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock rule for {path}")
    finally:
        os.close(fd)


def _drop_ids(settings: dict[str, Any] | None) -> bool:
    """The child's own uid and gid, no groups; without one (not root, or its folders out of
    its reach): no capabilities at least (those of root, or of a user namespace)."""
    if settings is None:
        _libc.capset(struct.pack("Ii", 0x20080522, 0), ctypes.create_string_buffer(24))
        return False
    os.setgroups([])
    os.setresgid(settings["gid"], settings["gid"], settings["gid"])
    os.setresuid(settings["uid"], settings["uid"], settings["uid"])
    return True


def _seccomp(device: str = "cuda") -> bool:
    """Deny (EPERM) ``DENIED``, and clone with a namespace flag; clone3 is ENOSYS (its flags
    lie in memory a filter cannot read; glibc then falls back to clone).  On the CPU nothing
    kbx runs makes a process (the interpreter runs kernels in this one), so a clone without
    CLONE_THREAD, fork, vfork and exec are denied too: no helper process works outside the
    recorded one (``opcheck``), no fork bomb or orphan can start.  On the GPU Triton runs
    ``ptxas``, so processes stay possible there (the pid namespace still holds them)."""
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
        for name in ("fork", "vfork", "execve", "execveat"):
            filt.add_rule(sc.ERRNO(errno.EPERM), name)
        filt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
    filt.load()
    return True


def expected() -> tuple[str, ...]:
    """The layers of a full sandbox here: a user namespace only where kbx is not root."""
    return LAYERS if os.geteuid() == 0 else ("user", *LAYERS)


def probe() -> Level:
    """The layers this machine gives, found once per process by trying them all in a
    throwaway interpreter (forking a threaded parent is unsafe); one line on stderr names
    what is missing."""
    with _probe_lock:
        if not _level:
            got: list[str] = []
            cmd = [sys.executable, "-I", __file__, "--probe"]
            with contextlib.suppress(OSError, ValueError, IndexError, subprocess.SubprocessError):
                out = subprocess.run(cmd, capture_output=True, timeout=30, check=True).stdout
                got = json.loads(out.splitlines()[-1])
            want = expected()
            _level.append(
                Level(tuple(n for n in want if n in got), tuple(n for n in want if n not in got))
            )
            if _level[0].missing:
                missing = ", ".join(_level[0].missing)
                sys.stderr.write(f"kbx: sandbox {_level[0].name}: missing {missing}\n")
        return _level[0]


def require(level: Level | None = None) -> None:
    """For ``--require-sandbox``: raise, naming what is missing, unless the sandbox is full."""
    if (level := level or probe()).missing:
        raise SandboxUnavailable(f"sandbox required, but missing: {', '.join(level.missing)}")


def _probe_child() -> int:
    isolate()
    uid = PROBE_UID if os.geteuid() == 0 else None
    settings: dict[str, Any] = {"uid": uid, "gid": uid, "writable": [], "device": "cpu"}
    got = [*isolated(), *restrict({**settings, "limits": LIMITS})]
    print(json.dumps([n for n in got if n != "pid" or os.getpid() == 2]), flush=True)
    return 0


if __name__ == "__main__" and sys.argv[1:] == ["--probe"]:
    sys.exit(_probe_child())
