"""KernelAgent's generated test inside kbx's sandbox: started as ``python -m
kbx.sandbox.child.agenttest SETTINGS`` in the test's folder, it confines itself as a
candidate's child does (``kbx.sandbox.child.confine``: namespaces, a uid of its own, landlock,
seccomp, limits), then runs ``test_kernel.py`` as a script, whose exit code is the process's."""

from __future__ import annotations

import json
import os
import runpy
import sys

from kbx.sandbox.child import confine


def main(argv: list[str]) -> None:
    isolated = confine.isolate()
    confine.restrict(json.loads(argv[0]), isolated)
    sys.argv = ["test_kernel.py"]
    sys.path.insert(0, os.getcwd())  # the test's `from kernel import kernel_function`
    runpy.run_path("test_kernel.py", run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
