"""What held a process's GIL: py-spy's collapsed stacks summed by function.

Usage: python scripts/gil_report.py PYSPY.txt [N]
Reads ``py-spy record --gil -f raw`` output (one line per distinct stack: frames joined by ``;``,
then the sample count) and prints the N (default 25) functions with the most samples on top of
the stack (self) and anywhere in it (inclusive), each with its share of all samples.  A sample is
a thread that held the GIL at that instant, so the shares say where the job threads' one GIL went.
"""

from __future__ import annotations

import re
import sys
from collections import Counter

LINE = re.compile(r":\d+\)$")  # a frame's line number: functions are summed over their lines


def frames(stack: str) -> list[str]:
    return [LINE.sub(")", f) for f in stack.split(";") if "(" in f]


def main(path: str, n: int) -> None:
    own: Counter[str] = Counter()
    anywhere: Counter[str] = Counter()
    total = 0
    with open(path) as lines:
        for line in lines:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack or not count.isdigit():
                continue
            k, fs = int(count), frames(stack)
            total += k
            if fs:
                own[fs[-1]] += k
            for f in set(fs):
                anywhere[f] += k
    print(f"{total} samples holding the GIL")
    for title, counts in (("self", own), ("inclusive", anywhere)):
        print(f"\n{title}:")
        for name, k in counts.most_common(n):
            print(f"{k:8d} {k / max(total, 1):6.1%}  {name}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 25)
