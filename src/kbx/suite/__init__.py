"""The suite: each ``tasks/<Category>/<name>.py`` defines one ``TASK``; id = Category/name."""

from __future__ import annotations

import dataclasses
import fnmatch
import importlib.util
import traceback
from functools import cache
from pathlib import Path

from kbx.suite.task import Task

TASKS_DIR = Path(__file__).parent.parent / "tasks"  # kbx/tasks: the suite's data, beside it


def load_task_file(path: Path) -> Task:
    category, name = path.parent.name, path.stem
    spec = importlib.util.spec_from_file_location(f"kbx.tasks.{category}.{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load task file {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    task = getattr(module, "TASK", None)
    if not isinstance(task, Task):
        raise TypeError(f"{path}: must define TASK = Task(...)")
    return dataclasses.replace(task, id=f"{category}/{name}", category=category, name=name)


@cache
def loaded() -> tuple[dict[str, Task], dict[str, str]]:
    """All tasks by id, sorted by id, and the task files that failed to load (file and line ->
    why), so that one broken file does not stop a run."""
    tasks, errors = [], {}
    for path in sorted(TASKS_DIR.glob("*/*.py")):
        try:
            tasks.append(load_task_file(path))
        except Exception as exc:  # noqa: BLE001 - reported with its location
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(path)]
            line = f":{frames[-1].lineno}" if frames else ""
            errors[f"{path}{line}"] = f"{type(exc).__name__}: {exc}"
    return {t.id: t for t in tasks}, errors


def load_suite() -> dict[str, Task]:
    """All tasks by id (``load_errors`` lists the files left out)."""
    return loaded()[0]


def load_errors() -> dict[str, str]:
    """The task files that could not be loaded: file and line -> why."""
    return loaded()[1]


def select(pattern: str | None = None, category: str | None = None) -> list[Task]:
    """Tasks whose id matches ``pattern`` (globs, comma-separated: ``Math/*,Loss/*``) and
    ``category``, both in any case (``fusion`` is ``Fusion``, ``math/RSQRT`` is ``Math/rsqrt``)."""
    globs = [g.strip().casefold() for g in pattern.split(",") if g.strip()] if pattern else []
    out = []
    for task in load_suite().values():
        if globs and not any(fnmatch.fnmatchcase(task.id.casefold(), g) for g in globs):
            continue
        if category and task.category.casefold() != category.casefold():
            continue
        out.append(task)
    return out


def categories() -> list[str]:
    """The suite's categories, sorted."""
    return sorted({task.category for task in load_suite().values()})


def find(task_id: str) -> Task | None:
    """A task by id; ``name`` alone or ``name.py`` also resolve when unambiguous."""
    suite = load_suite()
    key = task_id.removesuffix(".py")
    if key in suite:
        return suite[key]
    matches = [t for t in suite.values() if t.name == key]
    return matches[0] if len(matches) == 1 else None
