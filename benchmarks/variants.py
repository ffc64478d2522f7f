"""The named candidate sets of ``benchmarks/throughput.py``: reference solutions made distinct.

A variant is a reference solution with ``# kbx variant N of TASK`` as the first line of every
jitted function's body: the kernels' source, hence Triton's cache key, changes (also where two
tasks' solutions share a kernel's source), and nothing they compute does.  ``keys`` checks that
in a compiling Triton, which reads a kernel's cache key without a GPU.  Sets: ``fresh`` (every
task once, variant 0) and ``rl`` (variants 1-16 of ``RL_TASKS`` tasks covering every category,
one group after another).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions" / "reference"
RL_TASKS, RL_GROUP = 24, 16


def jitted(code: str) -> list[ast.FunctionDef]:
    """The functions of ``code`` under a decorator that names jit (``triton.jit``, also below
    ``triton.autotune`` or ``triton.heuristics``)."""
    return [
        node
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.FunctionDef)
        and any("jit" in ast.unparse(d) for d in node.decorator_list)
    ]


def variant(code: str, task_id: str, number: int) -> str:
    """``code`` with ``# kbx variant N of TASK`` as the first line of every jitted function's
    body: the kernels' source, hence Triton's cache key, changes (also where two tasks' solutions
    share a kernel's source); nothing they compute does."""
    lines = code.splitlines(keepends=True)
    for fn in sorted(jitted(code), key=lambda f: -f.body[0].lineno):
        first = fn.body[0]
        mark = f"# kbx variant {number} of {task_id}\n"
        lines.insert(first.lineno - 1, " " * first.col_offset + mark)
    return "".join(lines)


def reference_code(task_id: str) -> str:
    return (SOLUTIONS / f"{task_id}.py").read_text()


def rl_tasks(task_ids: list[str], count: int = RL_TASKS) -> list[str]:
    """``count`` tasks covering every category: each category's tasks in turn, round-robin."""
    by_category: dict[str, list[str]] = {}
    for task_id in sorted(task_ids):
        by_category.setdefault(task_id.split("/")[0], []).append(task_id)
    chosen: list[str] = []
    while len(chosen) < min(count, len(task_ids)):
        for ids in by_category.values():
            if ids and len(chosen) < count:
                chosen.append(ids.pop(0))
    return chosen


def candidate_set(name: str, task_ids: list[str]) -> list[dict[str, Any]]:
    """The rows of a set's JSONL source: ``file`` (the task), ``code``, ``sample`` (the
    variant)."""
    if name == "rl":
        pairs = [(t, n) for t in rl_tasks(task_ids) for n in range(1, RL_GROUP + 1)]
    else:
        pairs = [(t, 0) for t in task_ids]
    return [{"file": t, "code": variant(reference_code(t), t, n), "sample": n} for t, n in pairs]


KEYS_SCRIPT = """
import importlib.util, json, sys
from triton.runtime.jit import JITFunction

def kernels(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = {}
    for attr, value in vars(module).items():
        while value is not None and not isinstance(value, JITFunction):
            value = getattr(value, "fn", None)  # an Autotuner's or Heuristics' kernel
        if value is not None:
            out[value.cache_key] = attr  # an alias counts once
    return out

keys = {}
for i, path in enumerate(sys.argv[1:]):
    keys[path] = kernels(path, f"kbx_keys_{i}")
print(json.dumps(keys))
"""


def keys(rows: list[dict[str, Any]], work: Path) -> dict[str, Any]:
    """Triton's cache key of every kernel of the reference solutions and of their variants,
    read in a compiling (not interpreted) Triton, which needs no GPU for it: every variant's
    kernels must have keys of their own."""
    folder = work / "keys"
    folder.mkdir(exist_ok=True)
    paths = {}
    for task_id in sorted({r["file"] for r in rows}):
        paths[(task_id, None)] = folder / f"{task_id.replace('/', '__')}.py"
        paths[(task_id, None)].write_text(reference_code(task_id))
    for r in rows:
        path = folder / f"{r['file'].replace('/', '__')}__{r['sample']}.py"
        path.write_text(r["code"])
        paths[(r["file"], r["sample"])] = path
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT / "src")
    got = subprocess.run(
        [sys.executable, "-c", KEYS_SCRIPT, *map(str, paths.values())],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        check=False,
    )
    if got.returncode != 0:
        return {"error": got.stderr.strip().splitlines()[-1:]}
    found = json.loads(got.stdout)
    by = {k: found[str(p)] for k, p in paths.items()}  # (task, variant) -> {key: kernel}
    seen = Counter(key for names in by.values() for key in names)
    kernels = [
        (k, name, key) for k, names in by.items() if k[1] is not None for key, name in names.items()
    ]
    return {
        "kernels": len(kernels),
        "distinct": sum(1 for _, _, key in kernels if seen[key] == 1),
        "not_distinct": sorted({f"{k[0]}:{name}" for k, name, key in kernels if seen[key] > 1}),
    }
