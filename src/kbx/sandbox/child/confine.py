"""Confinement of a candidate's child, applied from inside it: ``isolate`` moves the process into
new namespaces under an init that is kbx code, and ``restrict``, in the worker before any candidate
code, applies the other layers (resource limits, ``no_new_privs``, landlock, a uid of its own,
seccomp). The trusted parent prepares the settings (``kbx.sandbox.confine``); docs/design/
sandbox.md gives the threat each layer stops. ``python -m kbx.sandbox.child.confine --probe``
prints the layers this machine gives.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import signal
import struct
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from kbx.sandbox.child import layers
from kbx.sandbox.child.layers import MS_NODEV, MS_NOEXEC, MS_NOSUID, MS_PRIVATE, MS_REC, libc
from kbx.sandbox.wire.confinement import (
    CLONE_NEWUSER,
    LAYERS,
    LIMITS,
    NAMESPACES,
    PROBE_UID,
    SHM_BYTES,
    SandboxUnavailable,
)

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38


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


def restrict(settings: dict[str, Any] | None, isolated: Sequence[str]) -> tuple[str, ...]:
    """In the worker, before any candidate code: every layer this machine gives (None: none);
    the layers applied.  ``isolated``: the layers ``isolate`` gave.  A layer that fails is
    skipped; ``settings["require"]``: raise."""
    if settings is None:
        return ()
    writable, device = settings["writable"], settings["device"]
    own = "mount" in isolated
    scratch = settings.get("scratch")
    if own:  # its own /dev/shm, and its folder's own filesystem: before anything is revealed
        layers.own_disks(scratch, writable, SHM_BYTES)
    elif scratch is not None:  # the parent made a filesystem only a mount namespace can attach
        raise SandboxUnavailable("kbx: no mount namespace to attach the child's folder in")
    drop = settings.get("uid") is not None and os.geteuid() == 0 and layers.revealed(writable, own)
    steps = {
        "rlimits": lambda: layers.rlimits(settings["limits"], device, drop),
        "landlock": lambda: layers.landlock(writable, device),
        "uid": lambda: layers.drop_ids(settings if drop else None),
        "seccomp": lambda: layers.seccomp(device, bool(settings.get("locks"))),
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


def _probe_child() -> int:
    isolated = isolate()
    uid = PROBE_UID if os.geteuid() == 0 else None
    settings: dict[str, Any] = {"uid": uid, "gid": uid, "writable": [], "device": "cpu"}
    got = [*isolated, *restrict({**settings, "limits": LIMITS}, isolated)]
    print(json.dumps([n for n in got if n != "pid" or os.getpid() == 2]), flush=True)
    return 0


if __name__ == "__main__" and sys.argv[1:] == ["--probe"]:
    sys.exit(_probe_child())
