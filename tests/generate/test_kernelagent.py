"""KernelAgent end to end on the CPU over three tasks: the generated test run in a subprocess,
the ban scan's message fed back, early stop once a worker passes, clipped history, the
``kernel_function`` alias, and a task whose agent never succeeds."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from kbx.generate.ban import scan
from kbx.generate.config import KernelAgentConfig
from kbx.generate.judge import through
from kbx.generate.kernelagent import run_test, with_alias
from kbx.generate.runner import generate
from kbx.run.evaluator import Evaluator
from kbx.suite import find
from tests.generate.conftest import TASKS, fenced, plan, reference, task_in
from tests.generate.server import FakeServer, prompt_of
from tests.generate.test_oneshot import eval_verdicts, rows

TEST = """# task: {task}
import sys
from pathlib import Path

source = Path("kernel.py").read_text()
print("kernel checked")
sys.exit(0 if "ok-marker" in source else 1)
"""
BANNED = "import torch.nn.functional as F\n\ndef kernel_function(x):\n    return F.relu(x)\n"
FAILING = "def kernel_function(x):\n    return x  # still wrong, and a long line to clip\n"


def wrapper(task_id: str) -> str:
    """The reference kernel with its entry renamed to KernelAgent's wrapper, and the marker."""
    entry = find(task_id).entry  # type: ignore[union-attr]
    code = re.sub(rf"^def {entry}\(", "def kernel_function(", reference(task_id), flags=re.M)
    return code + "# ok-marker\n"


def ka_reply(body: dict[str, Any]) -> str:
    prompt = prompt_of(body)
    if "Write a standalone Python test file" in prompt:
        return fenced(TEST.format(task=task_in(prompt)))
    task = re.findall(r"# task: (\S+)", prompt)[0]
    if "Fix the kernel" not in prompt:
        return fenced(BANNED)  # the seeds
    if "Disallowed PyTorch usage detected" in prompt.split("Standard output:")[0]:
        return fenced(FAILING)
    return fenced(FAILING if task == "Math/add" else wrapper(task))


def test_kernelagent_end_to_end(server: FakeServer, evaluator: Evaluator, tmp_path: Path) -> None:
    server.respond = ka_reply
    cfg = KernelAgentConfig(workers=3, rounds=5, history_clip=(20, 30, 10), task_concurrency=3)
    out = tmp_path / "ka"
    manifest = asyncio.run(generate(plan(cfg, server.url, out, through(evaluator))))
    got = {r["file"].removesuffix(".py"): r for r in rows(out / "round_0.jsonl")}
    assert set(got) == set(TASKS)
    for task in ("Math/abs", "Activation/relu"):
        assert got[task]["agent_success"] and got[task]["alias_added"]
        assert got[task]["rounds_used"] == 3  # banned, failed, passed: then the workers stop
        entry = find(task).entry  # type: ignore[union-attr]
        assert got[task]["predict"].endswith(f"\n{entry} = kernel_function\n")
    assert not got["Math/add"]["agent_success"]  # the last tested kernel is submitted
    assert got["Math/add"]["predict"] == FAILING.rstrip() + "\n\n\nadd = kernel_function\n"
    costs = manifest["cost"]["tasks"]
    assert costs["Math/abs"]["calls"] == 1 + 3 + 3 + 3  # test, seeds, two rounds of refinement
    assert costs["Math/add"]["calls"] == 1 + 3 + 3 * 4  # no refinement after the last round

    refines = [prompt_of(b) for b in server.requests if "Fix the kernel" in prompt_of(b)]
    banned = [p for p in refines if "# task: Math/abs" in p and "Disallowed" in p]
    assert "Disallowed PyTorch usage detected: torch.nn, torch.nn.functional (F.*)" in banned[0]
    later = [p for p in refines if "# task: Math/add" in p and "Attempt 2:" in p][0]
    assert f"Attempt 2:\n```python\n{FAILING[:20]}\n```\nstderr:\n\nstdout:\nkernel che\n" in later

    verdicts = eval_verdicts(out / "round_0.jsonl", evaluator, tmp_path / "eval")
    in_loop = {
        e["task_id"]: e["verdict"] for e in rows(out / "trace.jsonl") if e["event"] == "select"
    }
    assert verdicts == in_loop
    assert verdicts == {
        "Math/abs": "passed",
        "Activation/relu": "passed",
        "Math/add": "runtime_error",
    }


def test_the_ban_scan() -> None:
    assert scan("import torch\ny = torch.matmul(a, b)\n") == (
        "Disallowed PyTorch usage detected: torch.matmul/mm/bmm"
    )
    assert scan("def f(a, b):\n    return a @ b\n") is not None
    assert scan("import inspect\n") is not None and scan("x = sys._getframe()\n") is not None
    assert scan("class M(nn.Module):\n    pass\n") is not None
    clean = (
        '"""Uses torch.nn.functional.relu as the reference."""\n# torch.matmul here\ny = x.sum()\n'
    )
    assert scan(clean) is None  # comments and docstrings are not code
    assert scan("@triton.jit\ndef k(x_ptr):\n    pass\nz = torch.exp(x)\n") is None


def test_the_alias_is_added_only_when_the_entry_is_missing() -> None:
    assert with_alias("def kernel_function(x):\n    pass\n", "gelu")[1]
    assert not with_alias("def gelu(x):\n    pass\n\ndef kernel_function(x):\n    pass\n", "gelu")[
        1
    ]
    assert not with_alias("def other(x):\n    pass\n", "gelu")[1]


def test_the_agents_test_runs_confined_and_is_killed_at_its_timeout(tmp_path: Path) -> None:
    outside = tmp_path / "escaped.txt"
    write = f"from pathlib import Path\nPath({str(outside)!r}).write_text('x')\n"
    code, _, err = asyncio.run(run_test(write, "", 30.0))
    assert code == 1 and "PermissionError" in err and not outside.exists()
    inside = "from pathlib import Path\nPath('note.txt').write_text('x')\nimport kernel\n"
    assert asyncio.run(run_test(inside, "x = 1\n", 30.0))[0] == 0  # its own folder is writable
    helper = "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'pass'])\n"
    code, _, err = asyncio.run(run_test(helper, "", 30.0))
    assert code == 1 and "PermissionError" in err  # no helper processes, as for a candidate
    code, _, err = asyncio.run(run_test("while True:\n    pass\n", "", 1.0))
    assert code == 124 and err == "the test ran past its 1 s timeout"
