"""Which sandbox layer keeps CUDA from starting in a child (run on a GPU machine as root):
each variant forks a fresh interpreter that isolates and restricts itself with one layer left
out, then makes a CUDA context.  Also: whether a CPU-only profiler session in a parent that
then forks leaves CUDA usable in the fork.  Prints one line per variant."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, os, sys
sys.path.insert(0, "src")
variant = sys.argv[1]
from kbx.sandbox.child import confine, layers
if variant == "no_proc":
    real = layers.mount
    layers.mount = lambda s, t, k, f, d="": None if k == "proc" else real(s, t, k, f, d)
isolated = confine.isolate() if variant != "no_isolate" else ()
settings = json.loads(sys.argv[2])
if variant == "no_uid":
    settings["uid"] = None
for layer in ("landlock", "seccomp", "rlimits"):
    if variant == f"no_{layer}":
        setattr(layers, layer, lambda *a, **k: False)
if variant == "ll_no_scopes":
    layers.LL_SCOPES = 0
if variant == "ll_no_ioctl":
    layers.LL_BY_ABI = tuple(x for x in layers.LL_BY_ABI if x[0] != 5)
if variant == "ll_no_tcp":
    layers.LL_TCP = 0
if variant == "ll_root_bare":
    settings["writable"].append("/")
    layers.LL_SCOPES = 0
    layers.LL_TCP = 0
for extra in ("/dev/shm", "/tmp", "/dev", "/", "/proc", "/sys", "/run", "/var"):
    if variant == "ll_write" + extra.replace("/", "_"):
        settings["writable"].append(extra)
if variant == "home":
    os.environ["HOME"] = settings["writable"][0]
if variant != "no_restrict":
    print("applied", confine.restrict(settings, isolated), flush=True)
import torch
try:
    torch.zeros(1, device="cuda").add_(1)
    torch.cuda.synchronize()
    print("cuda ok", flush=True)
except Exception as e:
    print("cuda FAILED", type(e).__name__, str(e).splitlines()[0][:200], flush=True)
"""

FORKED = r"""
import os, sys
import torch
from torch.profiler import ProfilerActivity, profile
with profile(activities=[ProfilerActivity.CPU]):
    pass
print("parent initialized:", torch.cuda.is_initialized(), flush=True)
pid = os.fork()
if pid == 0:
    try:
        torch.zeros(1, device="cuda"); print("fork after profiler: cuda ok", flush=True)
    except Exception as e:
        print("fork after profiler: FAILED", str(e).splitlines()[0][:150], flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"""


def main() -> None:
    sys.path.insert(0, "src")
    from kbx.sandbox import confine

    for variant in (
        "ll_write_",
        "ll_root_bare",
        "ll_write_proc",
        "ll_write_sys",
        "ll_write_run",
        "ll_write_var",
    ):
        work = Path(tempfile.mkdtemp(prefix="kbx-diag-", dir="/dev/shm"))
        settings = confine.prepare(work, [], "cuda")
        done = subprocess.run(
            [sys.executable, "-c", CHILD, variant, json.dumps(settings)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=Path.cwd(),
        )
        lines = (done.stdout + done.stderr).strip().splitlines()
        print(variant, "|", " / ".join(lines[-3:])[:400], flush=True)
        confine.release(settings)
    done = subprocess.run(
        [sys.executable, "-c", FORKED], capture_output=True, text=True, timeout=120
    )
    print("profiler+fork |", (done.stdout + done.stderr).strip()[-400:])
    print(
        subprocess.run(
            "ls -la /dev/nvidia* | head; mount | grep -i 'proc/driver' | head -3",
            shell=True,
            capture_output=True,
            text=True,
        ).stdout
    )


if __name__ == "__main__":
    main()
