"""Time an output file's way from the child to the parent: safetensors' own functions against kbx's.

The child writes each judged case's outputs to a file and hashes it; the parent reads it, checks
the hash and makes tensors of it (``kbx.sandbox.wire.outputs``).  For a float32 output of each size,
the median of REPEATS of: safetensors' way (``safetensors.torch.save`` to bytes, written and
hashed; read whole, hashed, ``safetensors.deserialize``) and kbx's (``save_case``, ``read_case``).
    PYTHONPATH=src python benchmarks/output_files.py [--mb 16 256] [--repeats 5]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import safetensors
import torch
from safetensors.torch import save

from kbx.sandbox.wire import outputs

TREE = '{"version":1,"runs":[{"t":"tensor","name":"t0"}]}'


def median_s(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def row(path: Path, mb: int, repeats: int) -> list[float]:
    """The four medians for one float32 output of ``mb`` MB."""
    t = torch.randn(mb << 18)
    cap = outputs.case_bytes_cap(t.nbytes)

    def st_write() -> None:
        data = save({"t0": t}, metadata={outputs.TREE_KEY: TREE})
        path.write_bytes(data)
        hashlib.sha256(data).hexdigest()

    def st_read() -> None:
        data = path.read_bytes()
        hashlib.sha256(data).hexdigest()
        dict(safetensors.deserialize(data))

    times = [median_s(st_write, repeats), median_s(st_read, repeats)]
    digest = outputs.save_case(path, [t])
    times.append(median_s(lambda: outputs.save_case(path, [t]), repeats))
    times.append(median_s(lambda: outputs.read_case(path, cap, digest), repeats))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, nargs="+", default=[16, 256])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    path = Path(tempfile.mkdtemp()) / "timed-0.safetensors"
    print("MB   safetensors write  read   kbx write  read   (median seconds)")
    for mb in args.mb:
        w0, r0, w1, r1 = row(path, mb, args.repeats)
        print(f"{mb:<4d} {w0:16.3f} {r0:6.3f} {w1:10.3f} {r1:6.3f}")


if __name__ == "__main__":
    main()
