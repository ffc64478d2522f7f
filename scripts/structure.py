"""Print the structure figures of kbx's source and exit 1 if any is off.

Run on purpose: ``.venv/bin/python scripts/structure.py``.  It reads the code (``ast``), never
imports it, except for ``kbx eval --help``, which it runs.  Figures:

- import cycles among ``kbx`` modules, imports inside functions counted;
- modules over 300 lines; the pipeline's length; median and p90 function length;
- ``kbx eval --help`` options; ``KBX_*`` environment variables read by the code;
- module-level mutable containers that functions write to (state returned through globals);
- helpers (functions and classes) defined in more than one task file; the README's size.
"""

from __future__ import annotations

import ast
import re
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
TASKS = SRC / "kbx" / "tasks"
LIMITS = {
    "import cycles": 0,
    "modules over 300 lines": 0,
    "pipeline lines": 40,
    "median function lines": 15,
    "p90 function lines": 40,
    "kbx eval options": 12,  # the 9 of the command, --backend and --ray-address, --task
    "environment variables": 1,
    "module-level state written by functions": 0,
    "helpers defined in several task files": 0,
    "README characters": 14_000,
    "README lines": 260,
    "README lines over 100 characters": 0,
}


def modules() -> dict[str, Path]:
    """Every module of the package but the task files, by dotted name."""
    found = {}
    for path in sorted((SRC / "kbx").rglob("*.py")):
        if TASKS in path.parents:
            continue
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(tree: ast.AST, name: str, known: set[str]) -> set[str]:
    """The kbx modules a module imports anywhere (functions included; not TYPE_CHECKING)."""
    package = name if (SRC / Path(*name.split(".")) / "__init__.py").exists() else name
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target != "kbx":
                out.add(target)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    sys.setrecursionlimit(10_000)
    for v in graph:
        if v not in index:
            visit(v)
    return found


def function_lengths(trees: dict[str, ast.Module]) -> list[int]:
    out = []
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                out.append((node.end_lineno or node.lineno) - node.lineno + 1)
    return out


MUTABLE_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "Counter", "deque"}
MUTATORS = {"append", "add", "update", "pop", "clear", "setdefault", "extend"}


def mutable_globals(tree: ast.Module) -> set[str]:
    """Names bound at module level to a dict, list or set (literal or constructed)."""
    found = set()
    for node in tree.body:
        if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
            continue
        value = node.value
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        built = isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1]
        if isinstance(value, ast.Dict | ast.List | ast.Set) or built in MUTABLE_CALLS:
            found |= {t.id for t in targets if isinstance(t, ast.Name)}
    return found


def written_into(node: ast.AST, mutable: set[str]) -> set[str]:
    """The module-level names one node of a function rebinds or writes into."""
    if isinstance(node, ast.Global):
        return set(node.names)
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
        owner: ast.AST = node.value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        owner = node.func.value if node.func.attr in MUTATORS else node
    else:
        return set()
    return {owner.id} if isinstance(owner, ast.Name) and owner.id in mutable else set()


def written_globals(tree: ast.Module) -> list[str]:
    """Module-level containers that a function of the module writes into, and globals it
    rebinds: state that travels through the module instead of objects."""
    mutable = mutable_globals(tree)
    written: set[str] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(fn):
                written |= written_into(node, mutable)
    return sorted(written)


def task_helpers() -> dict[str, list[str]]:
    """Helpers defined in more than one task file, by name.  A task's own parts are not helpers:
    ``reference``, ``make_inputs`` and every function its ``TASK = Task(...)`` names."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(TASKS.glob("*/*.py")):
        tree = ast.parse(path.read_text())
        roles = {"reference", "make_inputs"} | task_parts(tree)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name not in roles:
                where[node.name].append(str(path.relative_to(TASKS)))
    return {k: v for k, v in where.items() if len(v) > 1}


def task_parts(tree: ast.Module) -> set[str]:
    """The names a task file's ``Task(...)`` uses: in its arguments, and in the module-level
    values those arguments name (``quant=QUANT`` where ``QUANT = QuantStep(step, ...)``)."""
    bound = {
        target.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "Task":
            for keyword in node.keywords:
                used = {n.id for n in ast.walk(keyword.value) if isinstance(n, ast.Name)}
                for name in list(used):
                    if name in bound:
                        used |= {n.id for n in ast.walk(bound[name]) if isinstance(n, ast.Name)}
                names |= used
    return names


def eval_options() -> int:
    help_text = subprocess.run(
        [sys.executable, "-m", "kbx", "eval", "--help"], capture_output=True, text=True, check=True
    ).stdout
    options = set(re.findall(r"^\s+(--[a-z][a-z0-9-]*)", help_text, re.M))
    return len(options - {"--help"})


def env_vars() -> set[str]:
    found = set()
    for path in (SRC / "kbx").rglob("*.py"):
        found |= set(re.findall(r"\bKBX_[A-Z_]+\b", path.read_text()))
    return found


def main() -> int:
    mods = modules()
    trees = {name: ast.parse(path.read_text()) for name, path in mods.items()}
    graph = {name: imported(tree, name, set(mods)) for name, tree in trees.items()}
    loops = cycles(graph)
    big = {n: len(p.read_text().splitlines()) for n, p in mods.items()}
    big = {n: lines for n, lines in big.items() if lines > 300}
    lengths = sorted(function_lengths(trees))
    pipeline = mods.get("kbx.evaluate.pipeline")
    state = {n: w for n, t in trees.items() if (w := written_globals(t))}
    helpers = task_helpers()
    readme = (ROOT / "README.md").read_text()
    env = env_vars()
    figures = {
        "import cycles": len(loops),
        "modules over 300 lines": len(big),
        "pipeline lines": len(pipeline.read_text().splitlines()) if pipeline else 0,
        "median function lines": statistics.median(lengths),
        "p90 function lines": lengths[int(0.9 * (len(lengths) - 1))],
        "kbx eval options": eval_options(),
        "environment variables": len(env),
        "module-level state written by functions": sum(len(w) for w in state.values()),
        "helpers defined in several task files": len(helpers),
        "README characters": len(readme),
        "README lines": len(readme.splitlines()),
        "README lines over 100 characters": sum(len(x) > 100 for x in readme.splitlines()),
    }
    off = 0
    print(f"{len(mods)} modules, {len(lengths)} functions (task files apart)")
    for key, value in figures.items():
        ok = value <= LIMITS[key]
        off += not ok
        print(f"{'ok ' if ok else 'OFF'} {key:42} {value:>8} (at most {LIMITS[key]})")
    for loop in loops:
        print("  cycle:", " <-> ".join(loop))
    for name, lines in sorted(big.items(), key=lambda kv: -kv[1]):
        print(f"  {lines} lines: {name}")
    print("  environment variables:", ", ".join(sorted(env)))
    for name, written in state.items():
        print(f"  state in {name}: {', '.join(written)}")
    for name, files in helpers.items():
        print(f"  helper {name}: {', '.join(files)}")
    return 1 if off else 0


if __name__ == "__main__":
    sys.exit(main())
