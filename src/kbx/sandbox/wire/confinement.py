"""What parent and child agree about a child's confinement: the namespaces and layers a full
sandbox has, the resource limits, the uid a probe runs as, and the limits a fresh child's
process gets between fork and exec (``limit_resources``)."""

from __future__ import annotations

import resource

NAMESPACES = {"pid": 0x20000000, "net": 0x40000000, "mount": 0x00020000, "ipc": 0x08000000}
CLONE_NEWUSER = 0x10000000
LAYERS = ("pid", "net", "mount", "ipc", "uid", "landlock", "seccomp", "rlimits")
UID_BASE, UID_COUNT = 200_000, 65_536  # the children's uids: no account on a host uses these
PROBE_UID = UID_BASE - 1  # the probe's, just below them
# AS 16 GiB, on the CPU only: CUDA reserves far more address space than it uses, so on cuda it
# stays unlimited.  NPROC 512 processes and threads of the child's own uid; NOFILE 1024;
# FSIZE 16 GiB (as MAX_FILE_BYTES); CPU 3600 s, a backstop behind the parent's deadlines.
LIMITS = {"as": 16 << 30, "nproc": 512, "nofile": 1024, "fsize": 16 << 30, "cpu": 3600}
MAX_FILE_BYTES = 16 << 30  # a fresh child's file size limit (the sandbox sets its own)
SHM_BYTES = 64 << 20  # the size of each child's own /dev/shm (a tmpfs in its mount namespace)
# Files each of a child's own filesystems may hold (tmpfs's nr_inodes): a tmpfs capped in bytes
# alone holds any number of empty files, each about a KiB of kernel memory no cap counts
# (tests/exploits/inode_fill); an honest child makes a few hundred (its kernel cache, outputs)
FOLDER_INODES = 1 << 16
SHM_INODES = 1 << 12
# Linux's mount API (the same numbers on every architecture): the parent makes a child's folder a
# tmpfs mounted nowhere on the host (``sandbox.folder``); the child attaches it (``layers``)
MOVE_MOUNT, FSOPEN, FSCONFIG, FSMOUNT = 429, 430, 431, 432
FSCONFIG_SET_STRING, FSCONFIG_CMD_CREATE = 1, 6
MOUNT_ATTRS = 0x2 | 0x4  # MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV (Triton loads .so files it built)
MOVE_MOUNT_F_EMPTY_PATH = 0x4


class SandboxUnavailable(RuntimeError):
    """A sandbox layer was required and is not there."""


def limit_resources() -> None:
    """Run in a fresh child between fork and exec: no core file, bounded file size."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # an abort must not leave a core file
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
