"""What each part of a candidate's child adds to the host time of one timed call (run on a GPU
machine as root): each variant starts a fresh interpreter that sets up one part of the child
(the sandbox's layers, the op recorder's profiler sessions, the audit hook, the launch counter)
or all of them in the child's order, then times a small Triton kernel with kbx's CUDA clock.
Prints one JSON line per variant: the median host milliseconds of a clocked call, of a launch
alone and of a synchronize alone.  What it found is in docs/design/throughput.md (The child's
audit hook).

    python3 scripts/gpu_call_overhead.py [VARIANT ...]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

VARIANTS = (
    "plain",
    "isolate",
    "seccomp",
    "landlock",
    "rlimits",
    "profiler_cpu",
    "profiler_gpu",
    "guard",
    "counter",
    "all",
)

CHILD = r"""
import json, os, statistics, sys, time
sys.path.insert(0, os.path.abspath("src"))
variant, folder = sys.argv[1], sys.argv[2]
from kbx.sandbox.child import confine, layers
from kbx.sandbox.wire.confinement import LIMITS
settings = {"writable": [folder], "device": "cuda", "limits": LIMITS, "uid": None}
if variant in ("isolate", "all"):
    confine.isolate()
if variant in ("seccomp", "landlock", "rlimits", "all"):
    layers.libc.prctl(confine.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
if variant in ("rlimits", "all"):
    layers.rlimits(LIMITS, "cuda", False)
if variant in ("landlock", "all"):
    layers.landlock([folder], "cuda")
if variant in ("seccomp", "all"):
    layers.seccomp("cuda")
import torch, triton, triton.language as tl
from kbx.gpu import benchtime, clock
from kbx.sandbox.child import guard, launches, opcheck
torch.cuda.init(); torch.empty(1, device="cuda")
if variant == "all":
    benchtime.prepare_profiler()
recorders = {gpu: opcheck.recorder(gpu=gpu) for gpu in (False, True)}
counter = None
if variant in ("counter", "all"):
    marks = recorders[True].launches if variant == "all" else None
    counter = launches.install_launch_counter(False, None, marks=marks)

@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + i, tl.load(x + i, mask=i < n) + tl.load(y + i, mask=i < n), mask=i < n)

x = torch.randn(1 << 20, device="cuda"); y = torch.randn_like(x); out = torch.empty_like(x)
def call():
    add[(x.numel() // 1024,)](x, y, out, x.numel(), BLOCK=1024)
call(); torch.cuda.synchronize()
if variant in ("guard", "all"):
    guard.install()
sessions = {"profiler_cpu": [False], "profiler_gpu": [True], "all": [True]}
for gpu in sessions.get(variant, []):
    recorder = recorders[gpu]
    for _ in range(10):  # a task's cases, a session each
        recorder.start(); call(); torch.cuda.synchronize(); recorder.stop()
tick = clock.cuda_clock()
def median_ms(fn, reps=200):
    times = []
    for _ in range(reps):
        began = time.perf_counter(); fn(); times.append((time.perf_counter() - began) * 1000)
    return round(statistics.median(times), 4)
def launch_then_sync():
    call(); torch.cuda.synchronize()
result = {"variant": variant, "clocked_ms": median_ms(lambda: tick(call)),
          "launch_ms": median_ms(call), "sync_ms": median_ms(torch.cuda.synchronize),
          "launch_sync_ms": median_ms(launch_then_sync),
          "gpu_ms": round(statistics.median(tick(call) for _ in range(50)), 4)}
print(json.dumps(result), flush=True)
"""


def main() -> None:
    for variant in sys.argv[1:] or VARIANTS:
        with tempfile.TemporaryDirectory() as folder:
            child = Path(folder) / "child.py"  # a file: Triton reads its kernel's source
            child.write_text(CHILD)
            done = subprocess.run(
                [sys.executable, str(child), variant, folder],
                env={**os.environ, "TMPDIR": folder},  # the only folder landlock lets it write
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode or not lines:
            print(
                json.dumps(
                    {"variant": variant, "exit": done.returncode, "stderr": done.stderr[-600:]}
                ),
                flush=True,
            )
        else:
            print(lines[-1], flush=True)


if __name__ == "__main__":
    main()
