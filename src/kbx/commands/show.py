"""Human-readable description of a task (``kbx show``)."""

from __future__ import annotations

from kbx.suite.task import Task


def describe_task(task: Task) -> str:
    lines = [
        f"{task.id}  (version {task.version}{', in the paper' if task.paper else ''})",
        f"entry: {task.signature}",
    ]
    if task.aliases:
        lines.append(f"also accepted as: {', '.join(task.aliases)}")
    lines += ["", task.description]
    if task.math:
        lines += ["", f"math: {task.math}"]
    lines += ["", f"precision: {task.precision}"]
    if task.check is not None or task.random:
        lines.append(
            "checked by properties (outputs are not unique or are random)"
            + ("; same torch seed must give the same output" if task.random else "")
        )
    else:
        lines.append(
            f"tolerance: rtol={task.tolerance.rtol:g} atol={task.tolerance.atol:g}, "
            "NaN and Inf must match"
        )
        if task.quant is not None:
            lines.append(
                f"quantization step: up to 1 in {round(1 / task.quant.share):,} elements (at "
                f"least one) may be one step off beyond the tolerance; one step = "
                f"{task.quant.unit}"
            )
    if task.inplace:
        lines.append(f"arguments updated in place and checked: positions {list(task.inplace)}")
    lines += ["", "correctness cases:"] + [f"  {c.label()}  seed={c.seed}" for c in task.cases]
    lines += ["benchmark cases:"] + [
        f"  {c.label()}  seed={c.seed}  {task.flops(c):.3g} FLOP  {task.bytes_moved(c):.3g} B"
        for c in task.bench
    ]
    if task.notes:
        lines += ["", task.notes]
    return "\n".join(lines)
