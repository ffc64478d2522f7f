"""``kbx validate``: the suite's self-test.

For every task: (1) its PyTorch reference, run as a candidate through the real pipeline with the
Triton requirement off, must pass; (2) generic wrong outputs must be rejected wherever they are
wrong; (3) the reference must not be degenerate: its outputs vary across seeds and are not
near-constant.  The wrong outputs are made from the trusted reference output in this process, so
they need no child process.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from kbx.core.candidate import Candidate
from kbx.core.config import EvalConfig
from kbx.core.result import Result
from kbx.evaluate import check as reference
from kbx.evaluate.references import References, run_reference
from kbx.suite.task import Inputs, Task
from kbx.suite.tensors import leaves
from kbx.suite.verdict import Reject

Wrong = Callable[[Task, Inputs, Any], Any]


@dataclass
class TaskReport:
    task_id: str
    failures: list[str] = field(default_factory=list)
    probes: dict[str, str] = field(default_factory=dict)  # probe -> rejected | ACCEPTED | n/a

    @property
    def ok(self) -> bool:
        return not self.failures


def tree_map(fn: Callable[[torch.Tensor], torch.Tensor], x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return fn(x)
    if isinstance(x, tuple | list):
        return tuple(tree_map(fn, v) for v in x)
    return x


def noise(t: torch.Tensor) -> torch.Tensor:
    gen = torch.Generator().manual_seed(1234)
    if t.is_floating_point() or t.is_complex():
        return torch.rand(t.shape, generator=gen).to(t.dtype)
    if t.dtype == torch.bool:
        return torch.rand(t.shape, generator=gen) < 0.5
    return torch.randint(-100, 100, t.shape, generator=gen).to(t.dtype)


def perturb(t: torch.Tensor) -> torch.Tensor:
    """1e-2 relative change on 1% of the finite non-zero elements (at least one)."""
    if not t.is_floating_point() or t.numel() == 0:
        return t
    flat = t.clone().reshape(-1)
    ok = torch.nonzero(torch.isfinite(flat) & (flat != 0)).reshape(-1)
    if ok.numel() == 0:
        return t
    gen = torch.Generator().manual_seed(99)
    k = max(1, ok.numel() // 100)
    pick = ok[torch.randperm(ok.numel(), generator=gen)[:k]]
    flat[pick] = flat[pick] * 1.01
    return flat.reshape(t.shape)


def first_input(task: Task, inputs: Inputs, want: Any) -> Any:
    first = next((a for a in inputs.args if isinstance(a, torch.Tensor)), None)
    return None if first is None else first.detach().cpu().clone()


def low_precision(dtype: torch.dtype) -> Wrong:
    def run(task: Task, inputs: Inputs, want: Any) -> Any:
        if not any(t.dtype == torch.float32 for t in leaves(inputs.args)):
            return None  # the contract is not float32: nothing to probe
        cast = lambda t: t.to(dtype) if t.dtype == torch.float32 else t
        args = tuple(tree_map(cast, a) if isinstance(a, torch.Tensor) else a for a in inputs.args)
        try:
            out = run_reference(task, Inputs(args, inputs.kwargs), 0, "cpu")
        except Exception:  # noqa: BLE001 - no kernel for this dtype: round through it instead
            down = lambda t: t.to(dtype).float() if t.dtype == torch.float32 else t
            args = tuple(
                tree_map(down, a) if isinstance(a, torch.Tensor) else a for a in inputs.args
            )
            out = run_reference(task, Inputs(args, inputs.kwargs), 0, "cpu")
            out = tree_map(down, out)
        dtypes = iter([t.dtype for t in leaves(want)])
        return tree_map(lambda t: t.to(next(dtypes, t.dtype)), out)

    return run


PROBES: dict[str, Wrong] = {
    "zeros": lambda task, inputs, want: tree_map(torch.zeros_like, want),
    "ones": lambda task, inputs, want: tree_map(torch.ones_like, want),
    "first input": first_input,
    "noise": lambda task, inputs, want: tree_map(noise, want),
    "perturbed 1%": lambda task, inputs, want: tree_map(perturb, want),
    "fp16 compute": low_precision(torch.float16),
    "bf16 compute": low_precision(torch.bfloat16),
}


def same(a: Any, b: Any) -> bool:
    return reference.outputs_equal(a, b)


def accepted(task: Task, kind: str, index: int, output: Any, refs: References) -> bool:
    """Would kbx accept ``output`` for this case?  (Random tasks: judged by their checker.)"""
    try:
        if task.random:  # seed behaviour is not at stake here, only the checker
            inputs, want = refs.expected(task, kind, index)
            reference.compare_structure(output, want)
            assert task.check is not None
            return task.check(inputs, output) is None
        reference.judge_case(task, kind, index, [output], refs=refs)
    except Reject:
        return False
    return True


def probe_task(task: Task, report: TaskReport, refs: References | None = None) -> None:
    refs = References() if refs is None else refs
    for name, make in PROBES.items():
        outcome = "n/a"
        if name in task.exempt_probes:
            report.probes[name] = "exempt"
            continue
        for index in range(len(task.cases)):
            inputs, want = refs.expected(task, "cases", index)
            wrong = make(task, task.make_inputs(task.cases[index], "cpu"), want)
            if wrong is None or same(wrong, want):
                continue  # not wrong here
            if accepted(task, "cases", index, wrong, refs):
                outcome = "ACCEPTED"
                report.failures.append(f"{name} accepted on case {index}")
                break
            outcome = "rejected"
        report.probes[name] = outcome


def check_degenerate(task: Task, report: TaskReport, refs: References) -> None:
    for index, case in enumerate(task.cases):
        _, want = refs.expected(task, "cases", index)
        other = replace(case, seed=case.seed + 100_003)
        moved = run_reference(task, task.make_inputs(other, "cpu"), other.torch_seed, "cpu")
        if same(moved, want):
            report.failures.append(f"case {index}: output does not change with the input seed")
        if any(near_constant(t) for t in leaves(want)):
            report.failures.append(f"case {index}: reference output is (near-)constant")


def check_steps(task: Task, report: TaskReport, refs: References) -> None:
    """A task with a quantization step (``Task.quant``), on each case: the reference output with
    one element one step off, beyond the tolerance, passes; three steps off, it fails."""
    if task.quant is None:
        return
    for index in range(len(task.cases)):
        inputs, want = refs.expected(task, "cases", index)
        moved = one_element_off(want, task, task.quant.size(inputs))
        if moved is None:
            report.failures.append(f"case {index}: no element where a step exceeds the tolerance")
            continue
        for steps, ok in ((1, True), (3, False)):
            if accepted(task, "cases", index, moved(steps), refs) != ok:
                verb = "rejected" if ok else "accepted"
                report.failures.append(f"case {index}: one element {steps} step(s) off {verb}")


def one_element_off(
    want: torch.Tensor, task: Task, size: Any
) -> Callable[[int], torch.Tensor] | None:
    """A maker of ``want`` with one element moved up by k steps: the element where one step is
    largest against the tolerance (and k steps stay in an int8 code's range); None if the step
    is nowhere above the tolerance."""
    tol = task.tolerance
    w = want.double()
    step = torch.ones_like(w)
    for factor in size if isinstance(size, tuple) else (size,):
        step = step * torch.as_tensor(factor, dtype=torch.float64).cpu()
    room = step / (tol.atol + tol.rtol * w.abs() + 1e-30)
    fits = torch.isfinite(w) & (w + 3 * step <= torch.finfo(w.dtype).max)
    if not want.is_floating_point():
        fits &= w + 3 * step <= torch.iinfo(want.dtype).max
    room = torch.where(fits & (step > 0), room, 0.0)
    if float(room.max()) <= 1.0:
        return None
    i = int(torch.argmax(room.reshape(-1)))

    def moved(k: int) -> torch.Tensor:
        out = want.clone().reshape(-1)
        w_i, step_i = w.reshape(-1)[i], step.reshape(-1)[i]
        out[i] = w_i + k * step_i
        if want.is_floating_point() and (out[i].double() - w_i).abs() > k * step_i:
            out[i] = torch.nextafter(out[i], want.reshape(-1)[i])  # rounded past k steps
        return out.reshape(want.shape)

    return moved


def near_constant(t: torch.Tensor) -> bool:
    if t.numel() <= 8:
        return False
    if not (t.is_floating_point() or t.is_complex()):
        return bool((t == t.reshape(-1)[0]).all())
    x = t.reshape(-1).to(torch.complex128 if t.is_complex() else torch.float64)
    x = x[torch.isfinite(x)] if not t.is_complex() else x
    if x.numel() <= 8:
        return False
    spread = float((x - x.mean()).abs().max())
    return spread <= 1e-6 * max(float(x.abs().mean()), 1e-30)


def reference_candidate(task: Task) -> Candidate:
    code = (
        f"from kbx.suite import find as _find\n\nkernel_function = _find({task.id!r}).reference\n"
    )
    return Candidate(source=f"<reference of {task.id}>", task_id=task.id, code=code)


def validate(
    tasks: list[Task],
    cfg: EvalConfig,
    jobs: int,
    on_done: Callable[[TaskReport], None] | None = None,
) -> list[TaskReport]:
    """Validate tasks in parallel; reports in suite order.  Each task's reference runs as a
    candidate through an Evaluator; the probes run torch on the CPU in ``jobs`` threads of this
    process: each gets its share of the cores, not all of them."""
    from kbx.run.evaluator import Evaluator

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // max(1, jobs)))
    tuning = cfg.tuning.model_copy(update={"jobs": max(1, jobs)})
    ev = Evaluator(
        cfg.device, perf=False, run_dir=cfg.run_dir, baselines=None, tuning=tuning, trusted=True
    )
    by_task = {t.id: t for t in tasks}
    reports: dict[str, TaskReport] = {}
    refs = References()  # the probes' reference outputs, computed once per case
    with ev, ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [
            pool.submit(validate_task, by_task[cand.task_id], result, refs)
            for cand, result in ev.pairs(reference_candidate(t) for t in tasks)
        ]
        for fut in as_completed(futures):
            report = fut.result()
            reports[report.task_id] = report
            if on_done:
                on_done(report)
    return [reports[t.id] for t in tasks]


def validate_task(task: Task, result: Result, refs: References) -> TaskReport:
    """The task's report: its reference's result as a candidate, then the probes."""
    report = TaskReport(task.id)
    report.probes["reference"] = str(result.verdict)
    if result.verdict != "passed":
        report.failures.append(f"reference as a candidate: {result.verdict}: {result.detail}")
    try:
        probe_task(task, report, refs)
        check_degenerate(task, report, refs)
        check_steps(task, report, refs)
    except Exception as exc:  # noqa: BLE001 - a broken task definition is a finding, not a crash
        report.failures.append(f"probe error: {type(exc).__name__}: {exc}")
    return report
