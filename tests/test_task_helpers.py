"""Task files share helpers through kbx modules, never by copying them (docs/design/task-format.md).

The rule is scripts/structure.py's: a top-level function or class of a task file, other than the
task's own parts (reference, make_inputs, what its Task(...) names), is defined in one task file.
"""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def structure():
    spec = importlib.util.spec_from_file_location("structure", ROOT / "scripts" / "structure.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_helper_is_defined_in_two_task_files(structure):
    copies = structure.task_helpers()
    assert not copies, "move these into a kbx module and import them: " + "; ".join(
        f"{name} in {', '.join(files)}" for name, files in copies.items()
    )


def test_a_copied_helper_is_caught(structure, tmp_path, monkeypatch):
    helper = "def out_hw(c):\n    return c.shape[-2:]\n"
    for name in ("a", "b"):
        (tmp_path / "Cat").mkdir(exist_ok=True)
        (tmp_path / "Cat" / f"{name}.py").write_text(
            f"{helper}\ndef flops(c):\n    return 1.0\n\nTASK = Task(flops=flops)\n"
        )
    monkeypatch.setattr(structure, "TASKS", tmp_path)
    assert structure.task_helpers() == {"out_hw": ["Cat/a.py", "Cat/b.py"]}  # flops: a role
