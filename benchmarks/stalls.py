"""Evidence of a stalled GPU run: beside ``benchmarks/gpu.py`` on the GPU machine, it watches
the GPU lock's hold log of each run folder under ``--under``; once the log has not grown for
``--quiet`` seconds while kbx runs, it writes to ``--out`` who holds and who waits for the lock
(``kbx.gpu.lockholders``, from ``/proc/locks``), the process tree, and the Python stack of
every kbx process (``py-spy dump``, where installed).  A deadlock then names its holder and
where it waits, which the hold log alone cannot: a hold is logged when it ends.

    python benchmarks/stalls.py --under /tmp --out $OUT/stalls --quiet 45 &
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from kbx.gpu import lockholders  # noqa: E402 - kbx's reading of /proc/locks


def lock_logs(under: Path) -> list[Path]:
    return sorted(under.glob("kbx-figures-*/*/gpu*.lock.log"))


def cmd(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
    except OSError:
        return "?"


def dump(log: Path, out: Path, number: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    report = [
        f"stall {number} at {time.time():.1f}: {log} unchanged for"
        f" {time.time() - log.stat().st_mtime:.0f} s",
        *(
            f"{h.file} {'waits' if h.waiting else 'holds'} {h.mode} {h.pid}: {cmd(str(h.pid))}"
            for h in lockholders.holds(log.parent)
        ),
        "",
    ]
    tree = subprocess.run(
        ["ps", "-eo", "pid,ppid,stat,etimes,pcpu,rss,cmd", "--forest"],
        capture_output=True,
        text=True,
    ).stdout
    (out / f"stall{number}.txt").write_text("\n".join(report) + "\n" + tree)
    spy = shutil.which("py-spy")
    if spy is None:
        return
    with open(out / f"stall{number}-stacks.txt", "w") as f:
        for pid in python_pids():
            f.write(f"=== {pid}: {cmd(str(pid))}\n")
            f.flush()
            try:
                subprocess.run([spy, "dump", "--pid", str(pid)], stdout=f, stderr=f, timeout=20)
            except subprocess.TimeoutExpired:
                f.write("(py-spy timed out)\n")


def python_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and "python" in cmd(entry.name) and int(entry.name) != os.getpid():
            pids.append(int(entry.name))
    return sorted(pids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--under", type=Path, default=Path("/tmp"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--quiet", type=float, default=45.0)
    parser.add_argument("--dumps", type=int, default=2)
    parser.add_argument("--for-s", type=float, default=600.0)
    args = parser.parse_args()
    began, done = time.time(), 0
    last: dict[Path, float] = {}
    while done < args.dumps and time.time() - began < args.for_s:
        time.sleep(5)
        for log in lock_logs(args.under):
            mtime = log.stat().st_mtime
            quiet = time.time() - mtime >= args.quiet and last.get(log) != mtime
            if quiet and any("kbx" in cmd(str(p)) for p in python_pids()):
                done += 1
                last[log] = mtime
                dump(log, args.out, done)


if __name__ == "__main__":
    main()
