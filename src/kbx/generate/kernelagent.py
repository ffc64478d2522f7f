"""KernelAgent (methods.md 7.3): a generated test, W seed kernels, W workers that refine their
kernel in rounds (ban scan, then the test in a subprocess), stopped once one passes.

Workers advance in lockstep rounds so that runs replay deterministically: after a round with
a success, the lowest worker id among that round's successes wins and the others stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from kbx.generate import ka_prompts as prompts
from kbx.generate.ban import scan
from kbx.generate.config import KernelAgentConfig, Sampling
from kbx.generate.extract import extract
from kbx.generate.outputs import Pick
from kbx.generate.session import Session
from kbx.sandbox import confine
from kbx.sandbox.childenv import SOURCE_ROOT
from kbx.suite.prompt import render
from kbx.suite.task import Task

PASSED_ENV = ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "CUDA_HOME")  # what a GPU test needs
# (test code, kernel code, timeout) -> (exit code, stdout, stderr)
TestRunner = Callable[[str, str, float], Awaitable[tuple[int, str, str]]]


async def run_test(
    test: str, kernel: str, timeout_s: float, device: str = "cpu"
) -> tuple[int, str, str]:
    """The agent's test in a fresh interpreter, in a folder of its own, in kbx's sandbox
    (``agenttest``) with a scrubbed environment (the Triton interpreter on the CPU); a timeout
    kills its whole process group and fails the round."""
    with tempfile.TemporaryDirectory(prefix="kbx-ka-") as folder:
        Path(folder, "kernel.py").write_text(kernel)
        Path(folder, "test_kernel.py").write_text(test)
        env = {"PATH": os.environ.get("PATH", ""), "HOME": folder, "PYTHONDONTWRITEBYTECODE": "1"}
        env["PYTHONPATH"] = SOURCE_ROOT  # this kbx's agenttest, wherever kbx is installed
        env |= {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
        if device == "cpu":
            env["TRITON_INTERPRET"] = "1"
        settings = confine.prepare(Path(folder), [], device)  # as root: the folder's own uid
        try:
            return await run_confined(folder, env, json.dumps(settings), timeout_s)
        finally:
            confine.release(settings)


async def run_confined(
    folder: str, env: dict[str, str], settings: str, timeout_s: float
) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kbx.sandbox.child.agenttest", settings, cwd=folder, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # its init too, which ends the namespace
        await proc.wait()
        return 124, "", f"the test ran past its {timeout_s:g} s timeout"
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


@dataclass
class Worker:
    wid: int
    kernel: str
    tried: list[prompts.Tried] = field(default_factory=list)
    last_tested: str | None = None
    tested_rounds: int = 0
    passed: bool = False


def with_alias(code: str, entry: str) -> tuple[str, bool]:
    """KernelAgent's ``kernel_function`` wrapper, aliased to the task's entry when missing."""
    defines = re.search(rf"^(def|class)\s+{re.escape(entry)}\b|^{re.escape(entry)}\s*=", code, re.M)
    if defines or not re.search(r"^def kernel_function\b", code, re.M):
        return code, False
    return code.rstrip() + f"\n\n\n{entry} = kernel_function\n", True


class KernelAgent:
    def __init__(self, session: Session, cfg: KernelAgentConfig, runner: TestRunner) -> None:
        self.session, self.cfg, self.runner = session, cfg, runner

    def description(self, task: Task) -> str:
        text = render(task)
        if self.cfg.include_reference:
            import inspect

            text += "\n\nPyTorch reference:\n" + inspect.getsource(task.reference)
        return text

    async def run_task(self, task: Task) -> list[Pick]:
        self.session.step(task.id, "test generation")
        messages = [{"role": "user", "content": prompts.test_file(self.description(task))}]
        sampling = Sampling(
            temperature=self.cfg.refine_temperature, max_tokens=self.cfg.test_max_tokens
        )
        (reply,) = await self.session.ask(task.id, "test", messages, sampling)
        test = extract(reply.text, "ka_first_block")
        if not test:
            self.session.note(task.id, "stop", why="agent_no_test", error=reply.error)
            return await self.finish(task, [], None, stopped=0)
        workers = await self.seeds(task, test)
        winner, stopped = None, self.cfg.rounds
        for r in range(self.cfg.rounds):
            self.session.enter(task.id, r)
            self.session.step(task.id, f"round {r + 1}/{self.cfg.rounds}")
            await asyncio.gather(*(self.step(task, test, w, r) for w in workers if not w.passed))
            if winners := [w for w in workers if w.passed]:
                winner, stopped = winners[0], r + 1
                self.session.note(task.id, "stop", why="success", worker=winner.wid, round=r)
                break
        return await self.finish(task, workers, winner, stopped)

    async def seeds(self, task: Task, test: str) -> list[Worker]:
        messages = [{"role": "user", "content": prompts.kernel(test)}]
        sampling = Sampling(
            temperature=self.cfg.seed_temperature, max_tokens=self.cfg.kernel_max_tokens
        )
        replies = await self.session.ask(
            task.id, "seed", messages, sampling, range(self.cfg.workers)
        )
        return [Worker(i, extract(r.text, self.cfg.extraction)) for i, r in enumerate(replies)]

    async def step(self, task: Task, test: str, worker: Worker, r: int) -> None:
        """One round of one worker: ban scan or test; on failure a refinement (not after the
        last round, whose refinement would never be tested)."""
        violation = scan(worker.kernel)
        if violation:
            code, out, err = 1, "", violation
        else:
            code, out, err = await self.runner(test, worker.kernel, self.cfg.test_timeout_s)
            worker.last_tested, worker.tested_rounds = worker.kernel, r + 1
        self.session.note(
            task.id, "agent_test", worker=worker.wid, round=r, banned=violation is not None,
            exit_code=code, stdout=out[-4000:], stderr=err[-4000:],
        )  # fmt: skip
        if code == 0:
            worker.passed = True
            return
        k, e, o = self.cfg.history_clip
        worker.tried.append(prompts.Tried(worker.kernel[:k], err[:e], out[:o]))
        if r + 1 < self.cfg.rounds:
            worker.kernel = await self.refine(task, test, worker, err, out, r)

    async def refine(
        self, task: Task, test: str, worker: Worker, err: str, out: str, r: int
    ) -> str:
        past = worker.tried[-self.cfg.history :]
        messages = [
            {"role": "user", "content": prompts.refine(test, worker.kernel, err, out, past)}
        ]
        sampling = Sampling(
            temperature=self.cfg.refine_temperature, max_tokens=self.cfg.kernel_max_tokens
        )
        sample = worker.wid * self.cfg.rounds + r
        (reply,) = await self.session.ask(task.id, "refine", messages, sampling, [sample])
        return extract(reply.text, self.cfg.extraction) or worker.kernel

    async def finish(
        self, task: Task, workers: list[Worker], winner: Worker | None, stopped: int
    ) -> list[Pick]:
        """The kernel to submit (the winner's; on failure the last tested kernel of the worker
        with the most tested rounds), aliased and judged once: the method's one output row."""
        code = winner.kernel if winner else ""
        if winner is None and self.cfg.submit_on_failure and workers:
            best = max(workers, key=lambda w: (w.tested_rounds, -w.wid))
            code = best.last_tested or ""
        code, alias = with_alias(code, task.entry) if code else (code, False)
        outcome = (await self.session.test(task.id, [code]))[0] if code else None
        self.session.note(
            task.id, "select", agent_success=winner is not None, alias_added=alias,
            rounds_used=stopped, verdict=outcome.verdict if outcome else None,
        )  # fmt: skip
        meta = {
            "agent_success": winner is not None,
            "alias_added": alias,
            "rounds_used": stopped,
            "cost": self.session.cost_so_far(task.id),
        }
        return [Pick(task.id, 0, code, meta=meta)]
