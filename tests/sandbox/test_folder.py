"""A child's folder as the parent holds it: streams read through the parent's own descriptors,
files opened without following links, a name of kbx's replaced told apart, a filesystem of its
own where the machine allows; and the kernel store only the parent writes."""

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from kbx.sandbox import kernels
from kbx.sandbox.folder import Folder, tmpfs
from kbx.sandbox.wire.outputs import OutputError, read_case, save_case

ROOT = os.geteuid() == 0


@pytest.fixture(params=["plain", "private"])
def folder(request):
    if request.param == "private" and (not ROOT or tmpfs(1 << 20) < 0):
        pytest.skip("a filesystem of its own needs root and Linux's mount API")
    made = Folder("/tmp", 64 << 20, request.param == "private")
    yield made
    made.close()
    assert not made.path.exists()


def child_side(folder: Folder):
    """How the child reaches its folder in these tests: by the parent's descriptor (the child
    attaches a private one at the path in its own mount namespace)."""
    return f"/proc/self/fd/{folder.fd}"


def test_a_stream_is_read_through_the_parents_descriptor_whatever_its_name_becomes(folder):
    os.write(folder.streams["stderr.txt"], b"Traceback\nValueError: its own words\n")
    inside = child_side(folder)
    os.unlink(f"{inside}/stderr.txt")
    os.symlink("/proc/self/environ", f"{inside}/stderr.txt")
    assert folder.tail("stderr.txt").endswith("ValueError: its own words\n")
    assert "PATH=" not in folder.tail("stderr.txt")
    assert folder.tampered() == "replaced stderr.txt (kbx's file) with a symbolic link"


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (os.mkfifo, "replaced stdout.txt (kbx's file) with a FIFO"),
        (lambda p: open(p, "w").close(), "replaced stdout.txt (kbx's file) with another file"),
        (os.mkdir, "replaced stdout.txt (kbx's file) with a folder"),
        (None, "removed stdout.txt (kbx's file) from its folder"),
    ],
)
def test_any_change_of_a_kbx_name_is_told_without_opening_it(folder, make, said):
    inside = child_side(folder)
    assert folder.tampered() is None
    os.unlink(f"{inside}/stdout.txt")
    if make is not None:
        make(f"{inside}/stdout.txt")
    assert folder.tampered() == said  # a FIFO is never opened: this returns at once


def test_outputs_are_opened_without_following_links_and_checked_on_the_descriptor(folder):
    inside = child_side(folder)
    digest = save_case(type(folder.path)(f"{inside}/cases-0.safetensors"), [torch.ones(2)])
    got = read_case(folder.path / "cases-0.safetensors", 1 << 20, digest, folder.fd, os.getuid())
    assert torch.equal(got[0], torch.ones(2))
    with pytest.raises(OutputError, match="a file of uid"):
        read_case(folder.path / "cases-0.safetensors", 1 << 20, digest, folder.fd, 12345)
    os.symlink(f"{inside}/cases-0.safetensors", f"{inside}/cases-1.safetensors")
    with pytest.raises(OutputError, match="a symbolic link in place of kbx's file"):
        read_case(folder.path / "cases-1.safetensors", 1 << 20, None, folder.fd)
    os.mkfifo(f"{inside}/cases-2.safetensors")
    with pytest.raises(OutputError, match=r"not a regular file \(a FIFO\)"):
        read_case(folder.path / "cases-2.safetensors", 1 << 20, None, folder.fd)


@pytest.fixture
def private_folder():
    if not ROOT or tmpfs(1 << 20) < 0:
        pytest.skip("a filesystem of its own needs root and Linux's mount API")
    made = Folder("/tmp", 64 << 20, True)
    yield made
    made.close()


def test_a_private_folder_is_a_capped_filesystem_of_its_own_seen_nowhere_on_the_host(
    private_folder,
):
    folder = private_folder
    assert folder.private
    inside = child_side(folder)
    with open(f"{inside}/fill.bin", "wb") as f, pytest.raises(OSError, match="No space"):
        for _ in range(128):
            f.write(b"\0" * (1 << 20))
    assert os.listdir(folder.path) == []  # nothing of it on the host, at the folder's path
    assert os.statvfs(inside).f_blocks * os.statvfs(inside).f_frsize == 64 << 20
    assert os.fstat(folder.fd).st_dev != os.stat(folder.path).st_dev


def test_the_kernel_store_carries_regular_files_of_the_same_code_and_task_only(tmp_path, folder):
    store = kernels.store_root(tmp_path / "store")
    here = kernels.entry(store, "Activation/gelu", "code")
    assert here != kernels.entry(store, "Activation/relu", "code")  # one file, two tasks
    assert here != kernels.entry(store, "Activation/gelu", "other code")
    kernels.fill(here, folder)
    inside = f"{child_side(folder)}/triton-cache"
    os.makedirs(f"{inside}/ABC123")
    with open(f"{inside}/ABC123/_gelu.cubin", "wb") as f:
        f.write(b"kernel")
    os.symlink("/etc/passwd", f"{inside}/ABC123/passwd.json")  # never followed
    os.mkfifo(f"{inside}/ABC123/fifo.json")  # never opened
    with open(f"{inside}/..weird", "wb") as f:
        f.write(b"x")  # not a name Triton makes
    os.makedirs(f"{inside}/a/b")
    with open(f"{inside}/a/b/deep.json", "wb") as f:
        f.write(b"x")  # deeper than Triton's two levels
    assert kernels.keep(folder, here) == len(b"kernel")
    assert sorted(str(p.relative_to(here)) for p in here.rglob("*")) == [
        "ABC123",
        "ABC123/_gelu.cubin",
    ]
    assert (store.stat().st_mode & 0o777) == 0o700
    warm = Folder("/tmp", 1 << 20, False)
    try:
        kernels.fill(here, warm)
        cached = f"{child_side(warm)}/triton-cache/ABC123/_gelu.cubin"
        assert Path(cached).read_bytes() == b"kernel"
    finally:
        warm.close()
    shutil.rmtree(tmp_path / "store")


def test_a_run_that_times_nothing_keeps_its_kernels_but_not_its_autotuning_choices(
    tmp_path, folder
):
    """A correctness-only run's configs were benchmarked briefly beside other work: the store
    takes its kernels, not its choice, which a later timed run of the same code makes again."""
    here = kernels.entry(kernels.store_root(tmp_path / "store"), "Math/add", "x")
    kernels.fill(here, folder)
    inside = f"{child_side(folder)}/triton-cache"
    os.makedirs(f"{inside}/K1")
    for name in ("add_kernel.cubin", "add_kernel.autotune.json"):
        with open(f"{inside}/K1/{name}", "wb") as f:
            f.write(b"x")
    kernels.keep(folder, here, choices=False)
    assert sorted(p.name for p in here.rglob("*")) == ["K1", "add_kernel.cubin"]
    kernels.keep(folder, here)  # a timed run's: kept
    assert (here / "K1" / "add_kernel.autotune.json").exists()


def test_what_is_copied_back_is_capped(tmp_path, folder, monkeypatch):
    monkeypatch.setattr(kernels, "MAX_BYTES", 10)
    here = kernels.entry(kernels.store_root(tmp_path / "store"), "Math/add", "x")
    kernels.fill(here, folder)
    inside = f"{child_side(folder)}/triton-cache"
    for name, size in (("a.bin", 8), ("b.bin", 8), ("c.bin", 2)):
        with open(f"{inside}/{name}", "wb") as f:
            f.write(b"x" * size)
    assert kernels.keep(folder, here) == 10
    assert sorted(p.name for p in here.iterdir()) == ["a.bin", "c.bin"]


def test_a_kernels_group_file_is_pointed_at_the_childs_copies_and_names_nothing_else(
    tmp_path, folder
):
    """Triton finds a kernel only where its group file's paths exist: written by another child,
    they name that child's removed folder, so ``fill`` points them at this child's copies, and
    a path outside the kernel's own folder or a group of another shape names nothing."""
    here = kernels.entry(kernels.store_root(tmp_path / "store"), "Math/add", "x")
    assert here is not None
    (here / "H1").mkdir(parents=True)
    (here / "H1" / "_add.cubin").write_bytes(b"kernel")
    (here / "H1" / "_add.json").write_bytes(b"{}")
    paths = {
        "_add.cubin": "/tmp/kbx-gone/triton-cache/H1/_add.cubin",
        "_add.json": "/tmp/kbx-gone/triton-cache/H1/_add.json",
        "_x.ptx": "/etc/passwd",  # no such file beside it: dropped
        "_y.ptx": 7,
    }
    (here / "H1" / "__grp___add.json").write_text(json.dumps({"child_paths": paths}))
    (here / "H2").mkdir()
    (here / "H2" / "__grp___sub.json").write_bytes(b"not json")
    kernels.fill(here, folder)
    inside = Path(f"{child_side(folder)}/triton-cache")
    group = json.loads((inside / "H1" / "__grp___add.json").read_text())["child_paths"]
    assert group == {
        "_add.cubin": str(folder.path / "triton-cache" / "H1" / "_add.cubin"),
        "_add.json": str(folder.path / "triton-cache" / "H1" / "_add.json"),
    }
    assert (inside / "H1" / "_add.cubin").read_bytes() == b"kernel"
    assert json.loads((inside / "H2" / "__grp___sub.json").read_text()) == {"child_paths": {}}
