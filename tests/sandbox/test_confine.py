"""Each layer of ``confine`` tried for real: a script runs ``isolate()`` then ``restrict()`` with
settings from ``prepare()`` made here, as the parent does, then tries an attack that must fail."""

import contextlib
import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from kbx.sandbox import confine

SRC = str(Path(confine.__file__).resolve().parents[2])
PRELUDE = f"""
import ctypes, errno, json, os, signal, sys
sys.path.insert(0, {SRC!r})
from kbx.sandbox.child import confine
isolated = confine.isolate()
settings = json.loads(sys.argv[1])
applied = confine.restrict(settings, isolated)
libc = ctypes.CDLL(None, use_errno=True)
def say(**fields):
    print(json.dumps(fields), flush=True)
def err(call, *args):
    try:
        call(*args)
    except OSError as e:
        return e.errno
    return None
"""
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux mechanisms")


@pytest.fixture
def work():
    """A fresh folder other users can reach (pytest's own lies below a 0700 one)."""
    folder = Path(tempfile.mkdtemp(prefix="kbx-confine-", dir=scratch()))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def scratch() -> str | None:
    return "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


def start(body: str, work: Path, tweak=None, **popen) -> tuple[subprocess.Popen, dict]:
    settings = confine.prepare(work, [], "cpu")
    if tweak:
        tweak(settings)
    script = PRELUDE + textwrap.dedent(body)
    cmd = [sys.executable, "-c", script, json.dumps(settings)]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(work), "TMPDIR": str(work)}
    proc = subprocess.Popen(
        cmd, cwd=work, env=env, stdout=subprocess.PIPE, start_new_session=True, **popen
    )
    return proc, settings


def run(body: str, work: Path, tweak=None, timeout: float = 60) -> tuple[int, list[dict]]:
    """The script's exit code (as Popen gives it) and what it said, one JSON object a line."""
    proc, settings = start(body, work, tweak)
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        kill(proc)
        confine.release(settings)
    return proc.returncode, [json.loads(line) for line in out.splitlines() if line.strip()]


def kill(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def test_probe_finds_every_layer_on_this_machine_quickly():
    began = time.monotonic()
    level = confine.probe()
    assert level.name == "full", level.missing
    assert set(level.layers) == set(confine.expected())
    assert confine.probe() is level  # once per process
    assert time.monotonic() - began < 1.0


def test_require_names_what_is_missing():
    confine.require(confine.Level(confine.LAYERS, ()))
    with pytest.raises(confine.SandboxUnavailable, match="landlock, seccomp"):
        confine.require(confine.Level(("pid",), ("landlock", "seccomp")))
    assert confine.Level((), ("pid",)).name == "none"
    assert confine.Level(("pid",), ("uid",)).name == "partial"


def test_every_layer_is_applied_and_the_worker_sees_its_own_namespace(work):
    code, said = run(
        """
        pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        say(applied=applied, isolated=isolated, pid=os.getpid(), ppid=os.getppid(),
            pids=pids, uid=os.getuid(), sid=os.getsid(0))
        """,
        work,
    )
    assert code == 0
    seen = said[0]
    assert set(seen["applied"]) | set(seen["isolated"]) >= set(confine.LAYERS)
    assert (seen["pid"], seen["ppid"], seen["pids"]) == (2, 1, [1, 2])
    assert seen["sid"] == 2  # a session of its own
    assert seen["uid"] >= confine.UID_BASE or os.geteuid() != 0  # a uid of its own, as root


def test_no_network_not_even_loopback(work):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    code, said = run(
        f"""
        import socket
        def connect():
            socket.create_connection(("127.0.0.1", {port}), timeout=2)
        def bind():
            socket.socket().bind(("127.0.0.1", 0))
        def udp():
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", {port}))
        say(connect=err(connect), bind=err(bind), udp=err(udp))
        """,
        work,
    )
    assert code == 0
    assert all(said[0][k] is not None for k in ("connect", "bind", "udp")), said
    with pytest.raises(TimeoutError):
        listener.accept()  # nothing reached the test's listener
    listener.close()


def test_writes_only_inside_the_writable_folder_and_no_reads_of_another_child(work):
    outside = Path(tempfile.mkdtemp(prefix="kbx-outside-"))  # in /tmp, world-writable parent
    (outside / "victim").write_text("kept")
    os.chmod(outside, 0o777)
    other = Path(tempfile.mkdtemp(prefix="kbx-other-", dir=scratch()))
    (other / "candidate.py").write_text("secret")
    theirs = confine.prepare(other, [], "cpu")  # another child's folder, another uid
    try:
        code, said = run(
            f"""
            from pathlib import Path
            say(inside=err(Path("mine.txt").write_text, "ok"),
                tmp=err(Path({str(outside)!r}, "new").write_text, "x"),
                remove=err(os.unlink, {str(outside / "victim")!r}),
                shm=err(Path("/dev/shm/kbx-escape").write_text, "x"),
                null=err(Path("/dev/null").write_text, "x"),
                read=err(Path("/etc/hostname").read_text),
                other=err(os.listdir, {str(other)!r}))
            """,
            work,
        )
    finally:
        confine.release(theirs)
        shutil.rmtree(other)
    victim = (outside / "victim").read_text()
    left = sorted(p.name for p in outside.iterdir())
    shutil.rmtree(outside)
    assert code == 0
    seen = said[0]
    assert seen["inside"] is None and (work / "mine.txt").read_text() == "ok"
    assert seen["null"] is None and seen["read"] is None
    assert all(seen[k] is not None for k in ("tmp", "remove", "shm", "other")), seen
    assert victim == "kept" and left == ["victim"] and not Path("/dev/shm/kbx-escape").exists()


def test_the_worker_cannot_signal_its_parents_or_the_test(work):
    code, said = run(
        f"""
        say(test=err(os.kill, {os.getpid()}, signal.SIGTERM),
            init=err(os.kill, 1, signal.SIGKILL),
            group=err(os.killpg, {os.getpgid(0)}, signal.SIGTERM))
        """,
        work,
    )
    assert code == 0  # X (pid 1) survived the SIGKILL, and S mirrors W's exit
    seen = said[0]
    assert seen["test"] in (1, 3) and seen["init"] == 1 and seen["group"] in (1, 3)  # EPERM/ESRCH


def marked(name: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == name:
                pids.append(int(entry.name))
        except OSError:
            pass
    return pids


def test_a_setsid_orphan_dies_with_the_process_group_of_s(work):
    name = f"kbxorph{os.getpid() % 100000}"
    proc, settings = start(
        f"""
        r, w = os.pipe()
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:  # the orphan: its parent exits at once
                libc.prctl(15, {name!r}.encode(), 0, 0, 0)  # PR_SET_NAME
                os.write(w, b"x")
                while True:
                    pass
            os._exit(0)
        os.read(r, 1)
        say(ready=True)
        signal.pause()
        """,
        work,
        gpu_like,
    )
    try:
        assert json.loads(proc.stdout.readline()) == {"ready": True}
        assert marked(name)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        end = time.monotonic() + 5
        while marked(name) and time.monotonic() < end:
            time.sleep(0.02)
        assert not marked(name)
    finally:
        for pid in marked(name):  # only if the test failed
            os.kill(pid, signal.SIGKILL)
        kill(proc)
        proc.stdout.close()
        confine.release(settings)


def gpu_like(settings: dict) -> None:
    """Settings of a child on the GPU, where processes may be made (Triton runs ptxas)."""
    settings["device"] = "cuda"
    settings["limits"]["nproc"] = 32


MEMFD = """
try:
    fd = os.memfd_create("m")
    os.close(fd)
    say(memfd="made")
except OSError as e:
    say(memfd=e.errno)
"""


def test_memory_files_are_enosys_on_the_cpu_and_left_to_the_gpus_driver(work):
    """On the CPU an anonymous memory file would hold memory past the address-space limit; on
    the GPU no such limit holds the process, and NVIDIA's driver makes such files itself."""
    assert run(MEMFD, work)[1] == [{"memfd": errno.ENOSYS}]
    assert run(MEMFD, work, gpu_like)[1] == [{"memfd": "made"}]


def test_on_the_cpu_no_process_can_be_made_but_threads_can(work):
    code, said = run(
        """
        import threading
        out = {}
        for name, call in (("fork", os.fork), ("exec", lambda: os.execv("/bin/true", ["true"]))):
            try:
                call()
                out[name] = "worked"
            except OSError as e:
                out[name] = e.errno
        t = threading.Thread(target=lambda: out.setdefault("thread", "ran"))
        t.start()
        t.join()
        say(**out)
        """,
        work,
    )
    assert code == 0
    assert said[0] == {"fork": 1, "exec": 1, "thread": "ran"}  # EPERM


def test_on_the_cpu_no_file_can_be_locked(work):
    """Every child's locks on one inode meet, and a lock needs only a descriptor open for
    reading: lock states on files all children read (a package's sources) would carry bits
    between them (tests/exploits/flock_relay).  flock and fcntl's record locks are ENOLCK."""
    code, said = run(
        """
        import fcntl, struct
        fd = os.open(os.__file__, os.O_RDONLY)
        out = {"flock": err(fcntl.flock, fd, fcntl.LOCK_SH | fcntl.LOCK_NB)}
        record = struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 0, 0)
        for name in ("F_GETLK", "F_SETLK", "F_OFD_GETLK", "F_OFD_SETLK"):
            out[name] = err(fcntl.fcntl, fd, getattr(fcntl, name), record)
        out["F_GETFL"] = err(fcntl.fcntl, fd, fcntl.F_GETFL)  # other fcntl commands work
        say(**out)
        """,
        work,
    )
    assert code == 0
    enolck = errno.ENOLCK
    assert said[0] == {
        "flock": enolck,
        "F_GETLK": enolck,
        "F_SETLK": enolck,
        "F_OFD_GETLK": enolck,
        "F_OFD_SETLK": enolck,
        "F_GETFL": None,
    }


def test_a_fork_bomb_is_bounded_where_processes_may_be_made(work):
    code, said = run(
        """
        forks = 0
        try:
            while forks < 1000:
                if os.fork() == 0:
                    signal.pause()
                forks += 1
        except OSError as e:
            fork_err = e.errno
        say(forks=forks, fork_err=fork_err)
        """,
        work,
        gpu_like,
    )
    assert code == 0
    assert said[0]["forks"] < 32 and said[0]["fork_err"] == 11  # EAGAIN


def test_resource_limits_hold_memory_and_files(work):
    def tweak(settings):
        settings["limits"]["nproc"] = 32

    code, said = run(
        """
        import resource
        try:
            bytearray(confine.LIMITS["as"] * 2)
            memory = "allocated"
        except MemoryError:
            memory = "MemoryError"
        files = []
        try:
            while len(files) < 5000:
                files.append(os.open("/dev/null", os.O_RDONLY))
        except OSError as e:
            files_err = e.errno
        for fd in files:
            os.close(fd)
        say(memory=memory, files=len(files), files_err=files_err,
            core=resource.getrlimit(resource.RLIMIT_CORE))
        """,
        work,
        tweak,
    )
    assert code == 0
    seen = said[0]
    assert seen["memory"] == "MemoryError"
    assert seen["files"] < 1024 and seen["files_err"] == 24  # EMFILE
    assert seen["core"] == [0, 0]


def test_ptrace_mounts_and_new_namespaces_are_denied_but_threads_work(work):
    code, said = run(
        """
        import threading
        def call(name, *args):
            return 0 if getattr(libc, name)(*args) == 0 else ctypes.get_errno()
        t = threading.Thread(target=lambda: None)
        t.start()
        t.join()
        say(traceme=call("ptrace", 0, 0, 0, 0), unshare=call("unshare", 0x10000000),
            mount=call("mount", b"none", b"/tmp", b"tmpfs", 0, None),
            vm=call("process_vm_readv", 1, None, 0, None, 0, 0), thread=True)
        """,
        work,
    )
    assert code == 0
    assert said[0] == {"traceme": 1, "unshare": 1, "mount": 1, "vm": 1, "thread": True}


def test_exit_codes_and_signals_of_the_worker_are_those_of_the_process(work):
    assert run("sys.exit(3)", work)[0] == 3
    assert run("ctypes.string_at(0)", work)[0] == -signal.SIGSEGV
    assert run("os.kill(os.getpid(), signal.SIGKILL)", work)[0] == -signal.SIGKILL


def test_torch_triton_and_the_cpu_profiler_work_inside(work):
    (work / "kernel.py").write_text(
        textwrap.dedent(
            """
            import triton
            import triton.language as tl

            @triton.jit
            def add(x, y, out, n, BLOCK: tl.constexpr):
                i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                tl.store(out + i, tl.load(x + i, mask=i < n) + tl.load(y + i, mask=i < n),
                         mask=i < n)
            """
        )
    )
    code, said = run(
        """
        os.environ["TRITON_INTERPRET"] = "1"
        import torch
        from torch.profiler import ProfilerActivity, profile
        import kernel
        x, y = torch.arange(100.0), torch.ones(100)
        out = torch.empty(100)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            kernel.add[(4,)](x, y, out, 100, BLOCK=32)
            torch.mm(torch.ones(8, 8), torch.ones(8, 8))
        events = [e.key for e in prof.key_averages()]
        say(ok=bool(torch.equal(out, x + y)), mm="aten::mm" in events, applied=applied)
        """,
        work,
        timeout=120,
    )
    assert code == 0
    assert said[0]["ok"] and said[0]["mm"] and "seccomp" in said[0]["applied"]


def test_each_child_gets_a_uid_of_its_own_and_owns_its_folders(work):
    if os.geteuid() != 0:
        pytest.skip("uids are chosen only when kbx runs as root")
    folders = [work / str(i) for i in range(8)]
    for folder in folders:
        folder.mkdir()
        (folder / "job.json").write_text("{}")
    settings: list[dict] = []
    threads = [
        threading.Thread(target=lambda f=f: settings.append(confine.prepare(f, [], "cpu")))
        for f in folders
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    uids = {s["uid"] for s in settings}
    assert len(uids) == 8 and min(uids) >= confine.UID_BASE
    for s in settings:
        folder = Path(s["writable"][0])
        assert folder.stat().st_uid == (folder / "job.json").stat().st_uid == s["uid"]
        confine.release(s)
    again = confine.prepare(work, [], "cpu")
    confine.release(again)
    assert again["uid"] in uids  # released, then reused


def test_without_root_the_user_namespace_stands_in_and_only_the_uid_is_missing(work):
    if os.geteuid() != 0:
        pytest.skip("drops to nobody from root")
    os.chmod(work, 0o777)
    script = f"""
import json, os, sys
sys.path.insert(0, {SRC!r})
from kbx.sandbox.child import confine
os.setgroups([]); os.setgid(65534); os.setuid(65534)
isolated = confine.isolate()
settings = {{"uid": None, "gid": None, "writable": [{str(work)!r}], "device": "cpu",
            "limits": confine.LIMITS}}
got = [*isolated, *confine.restrict(settings, isolated)]
print(json.dumps([got, os.getpid(), os.getuid()]), flush=True)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=30)
    got, pid, uid = json.loads(out.stdout)
    assert set(got) == (set(confine.LAYERS) - {"uid"}) | {"user"}
    assert pid == 2 and uid == 65534


def test_what_a_child_makes_is_its_own_even_in_a_folder_both_may_write(work):
    """umask 077: a folder a child makes, and the files in it, are its uid's alone; a later child
    of another uid, allowed by landlock to write the same place (as children once shared a
    kernel cache), can neither read them nor add to them."""
    if os.geteuid() != 0:
        pytest.skip("uids are chosen only when kbx runs as root")
    cache = work / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    held, said = [], []
    try:
        for name in ("first", "second"):
            folder = work / name
            settings = confine.prepare(folder, [], "cpu", [cache])
            held.append(settings)  # kept: the second child gets another uid
            body = f"""
            def make():
                os.makedirs({str(cache / "hash")!r}, exist_ok=True)
                with open({str(cache / "hash" / name)!r}, 'w') as f:
                    f.write('x')
            def peek():
                return open({str(cache / "hash" / "first")!r}).read()
            say(uid=os.getuid(), applied=list(applied), make=err(make), peek=err(peek))
            """
            script = PRELUDE + textwrap.dedent(body)
            out = subprocess.run(
                [sys.executable, "-c", script, json.dumps(settings)],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert out.returncode == 0, out.stderr
            said.append(json.loads(out.stdout))
            assert "uid" in said[-1]["applied"]
        assert held[0]["uid"] != held[1]["uid"]
        assert said[0]["make"] is None and said[0]["peek"] is None
        assert said[1]["make"] == errno.EACCES and said[1]["peek"] == errno.EACCES
        assert sorted(p.name for p in (cache / "hash").iterdir()) == ["first"]
        assert (cache / "hash").stat().st_mode & 0o777 == 0o700
    finally:
        for settings in held:
            confine.release(settings)


def test_a_child_has_its_own_capped_dev_shm_and_folder_and_sees_no_other(work):
    """Its /dev/shm is a tmpfs of its own (``SHM_BYTES``), the host's (every other child's
    folder below it) out of sight; with a folder made a filesystem of its own by the parent
    (``folder.Folder``), that filesystem is its working folder, capped at its size, and what it
    writes there reaches the parent through the parent's descriptor, not the host's path."""
    if os.geteuid() != 0:
        pytest.skip("a filesystem of its own needs root")
    from kbx.sandbox.folder import Folder
    from kbx.sandbox.wire.confinement import SHM_BYTES

    neighbour = Path(tempfile.mkdtemp(prefix="kbx-neighbour-", dir=scratch()))
    folder = Folder(scratch(), 8 << 20, True)
    try:
        if not folder.private:
            pytest.skip("no Linux mount API here")
        dev, ino = folder.identity

        def tweak(settings):
            folder.own(settings["uid"])
            settings["scratch"] = {"path": str(folder.path), "dev": dev, "ino": ino}

        body = """
        def fill(path, mib):
            with open(path, "wb") as f:
                for _ in range(mib):
                    f.write(b"\\0" * (1 << 20))
        shm = os.statvfs("/dev/shm")
        here = os.statvfs(".")
        say(cwd=os.getcwd(), shm=shm.f_blocks * shm.f_frsize, folder=here.f_blocks * here.f_frsize,
            seen=sorted(os.listdir("/dev/shm")), mine=err(fill, "mine.bin", 1),
            full=err(fill, "full.bin", 16), shm_write=err(fill, "/dev/shm/x", 1))
        """
        proc, settings = start(body, folder.path, tweak, pass_fds=(folder.mount,))
        try:
            out, _ = proc.communicate(timeout=60)
        finally:
            kill(proc)
            confine.release(settings)
        seen = json.loads(out.splitlines()[-1])
        assert seen["cwd"] == str(folder.path) and seen["mine"] is None
        assert seen["shm"] == SHM_BYTES and seen["folder"] == 8 << 20
        assert seen["seen"] == [folder.path.name]  # no neighbour: only its own mount point
        assert seen["full"] == errno.ENOSPC and seen["shm_write"] == errno.EACCES
        assert os.listdir(folder.path) == [] and not os.listdir(neighbour)  # the host's: untouched
        assert {"mine.bin", "stderr.txt", "stdout.txt"} <= set(os.listdir(folder.fd))
    finally:
        folder.close()
        shutil.rmtree(neighbour)
