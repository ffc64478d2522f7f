"""What a child's stderr says, in one line for a verdict's reason: the fault handler's headline
and the candidate's innermost frame for a crash, else the last exception from its headline on
(whose start names it: torch's out-of-memory message alone is longer than a reason's 400
characters), else the last lines; and whether that reason reads as the device's memory running
out, which the sandbox does not hold against the fork server, or as a disk running full.  The
text is the end of what the child wrote, read through the parent's own descriptor
(``folder.Folder.tail``): never a file read by a name the child could have replaced.
"""

from __future__ import annotations

import re
from pathlib import Path

# a traceback's last line: the exception's (dotted) class name, then its message
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b")
LIMIT = 400  # characters of a reason


def summary(text: str, workdir: Path) -> str:
    """The one-line reason of the stderr ``text`` of a child that ran in ``workdir``."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    fatal = [ln for ln in lines if ln.startswith("Fatal Python error")]
    ours = [ln for ln in lines if "candidate.py" in ln]
    if fatal:
        where = ours[0].replace('File "', "").replace('"', "") if ours else ""
        where = where.replace(f"{workdir}/", "")
        return f"{fatal[0]}" + (f" ({where})" if where else "")
    raised = [i for i, ln in enumerate(lines) if EXCEPTION_LINE.match(ln)]
    if raised:
        return " | ".join(lines[raised[-1] :])[:LIMIT]
    return " | ".join(lines[-3:])[-LIMIT:]


# torch's CUDA and CPU allocators, the CUDA driver, Python, the C library
MEMORY_WORDS = (
    "out of memory",
    "outofmemoryerror",
    "memoryerror",
    "cannot allocate memory",
    "can't allocate memory",
)


def lacked_memory(detail: str) -> bool:
    """Whether a child's failure reads as the device's (or the host's) memory running out."""
    lowered = detail.lower()
    return any(word in lowered for word in MEMORY_WORDS)


def lacked_space(detail: str) -> bool:
    """Whether a failure reads as a disk running full (ENOSPC, or SQLite's own word for it)."""
    return "No space left on device" in detail or "database or disk is full" in detail
