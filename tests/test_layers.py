"""The package's floors, read from its imports (docs/development.md, Layers): trusted code never
imports the code that runs beside the candidate, no floor imports one above it, and no two
folders of one floor import each other. Every import counts, those inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

SRC = ROOT / "src"
# Top to bottom: a unit (a folder, or a module at the package's root) may import its own floor's
# other units and those below. ``kbx.sandbox`` and ``kbx.sandbox.child`` share a floor and never
# import each other: the parent starts the child by module name.
FLOORS: list[tuple[str, ...]] = [
    ("kbx", "kbx.__main__", "kbx.cli", "kbx.api"),
    ("kbx.generate", "kbx.serve", "kbx.rewards"),
    ("kbx.commands", "kbx.analyze", "kbx.client", "kbx.audit"),
    ("kbx.run",),
    ("kbx.evaluate",),
    ("kbx.sandbox", "kbx.sandbox.child"),
    ("kbx.sandbox.wire",),
    ("kbx.gpu",),
    ("kbx.core",),
    ("kbx.tasks",),
    ("kbx.suite",),
]
# Code that runs beside untrusted code in its own process: the candidate's child and the fork
# server it comes from, and the audit of trusted solutions, which runs them in-process.
CHILD_SIDE = ("kbx.sandbox.child", "kbx.audit")


def module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(src: Path) -> dict[str, Path]:
    return {module_name(p, src): p for p in sorted(src.rglob("*.py"))}


def imports(path: Path, known: set[str]) -> set[str]:
    """The kbx modules ``path`` imports; ``from kbx.x import y`` names ``kbx.x.y`` where that is
    a module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = {f"{node.module}.{a.name}" for a in node.names}
            found.update((subs & known) or {node.module})
    return {name for name in found if name == "kbx" or name.startswith("kbx.")}


def unit(module: str) -> str:
    """The folder a module belongs to (its deepest listed one), or the module itself."""
    listed = [u for floor in FLOORS for u in floor if module == u or module.startswith(u + ".")]
    return max(listed, key=len) if listed else module


def floor_of(u: str) -> int:
    for number, floor in enumerate(FLOORS):
        if u in floor:
            return number
    raise KeyError(u)


def violations(src: Path) -> list[str]:
    """Every import that breaks a rule, as 'importer -> imported: why'."""
    known = modules(src)
    edges: set[tuple[str, str]] = set()
    found = []
    for name, path in known.items():
        for target in imports(path, set(known)):
            here, there = unit(name), unit(target)
            if here == there:
                continue
            edges.add((here, there))
            if there in CHILD_SIDE and here not in CHILD_SIDE:
                found.append(f"{name} -> {target}: trusted code imports child-side code")
            elif floor_of(there) < floor_of(here):
                found.append(f"{name} -> {target}: {here} imports {there}, a floor above it")
    for here, there in sorted(edges):
        if here < there and (there, here) in edges:
            found.append(f"{here} <-> {there}: two folders import each other")
    return found


def test_every_module_is_on_a_floor():
    assert [m for m in modules(SRC) if unit(m) == m and not any(m in f for f in FLOORS)] == []


def test_the_package_keeps_its_floors():
    assert violations(SRC) == []


@pytest.mark.parametrize(
    ("where", "line", "why"),
    [
        ("kbx/evaluate/check.py", "from kbx.sandbox.child import guard", "child-side"),
        ("kbx/suite/task.py", "from kbx.core import config", "a floor above"),
        ("kbx/sandbox/spawn.py", "import kbx.sandbox.child.main", "child-side"),
        ("kbx/gpu/clock.py", "from kbx.sandbox.wire import channel", "a floor above"),
    ],
)
def test_a_planted_violation_is_found(tmp_path, where, line, why):
    """The same check over a copy of the package with one import added fails, naming it."""
    copy = tmp_path / "src"
    for path in (SRC / "kbx").rglob("*.py"):
        target = copy / path.relative_to(SRC)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text())
    planted = copy / where
    planted.write_text(planted.read_text() + f"\n\ndef _planted():\n    {line}\n")
    found = violations(copy)
    assert found and why in found[0], found
