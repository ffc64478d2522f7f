"""Known-bad: forges a pass on kbx's progress channel.  It finds the pipe among its open file
descriptors and writes a message claiming the verdict `passed`, then exits."""
import json
import os


def _forge():
    for fd in range(3, 64):
        try:
            os.write(fd, (json.dumps({"event": "reject", "verdict": "passed",
                                      "detail": "all cases match"}) + "\n").encode())
        except OSError:
            continue
    os._exit(0)


def gelu(input, approximate="none"):
    _forge()
