"""The instruction a model receives for a task (``kbx show --prompt``, ``kbx prompts``).

The first part keeps the fields of KernelBench-X / TritonBench-T prompts (Functional Description,
Wrapper Entry Information, Math, other) so generation scripts written for them keep working; the
second states kbx's contract, which those prompts never did: shapes and dtypes, precision, the
Triton rule, and how the output is checked.
"""

from __future__ import annotations

from kbx.suite.task import Task

HEADER = (
    "You are an expert in writing Triton operators for efficient GPU programming. Use the Triton "
    "language to write a kernel and a Python wrapper according to the following instruction."
)

TRITON_RULE = (
    "All arithmetic of the task must run in your own @triton.jit kernels. The Python wrapper may "
    "use torch only to allocate outputs (torch.empty, torch.empty_like, torch.zeros, ...), to "
    "view, reshape, permute or make tensors contiguous, and to read shapes, strides and dtypes. "
    "Calling the PyTorch operation itself, other torch math, torch.compile or library kernels "
    "(cuBLAS, cuDNN, CUDA extensions) is not allowed: a call that launches no Triton kernel is "
    "rejected as no_triton whatever it returns."
)


def checking(task: Task) -> str:
    if task.random:
        return (
            "The output is random, so it is checked by its properties (see the description), "
            "and for determinism: derive your kernel's random seed from torch's default "
            "generator (for example seed = int(torch.randint(0, 2**31 - 1, (1,)))), so that "
            "the same torch.manual_seed gives the same output and another seed another."
        )
    if task.check is not None:
        return (
            "The output is not unique, so it is checked by its mathematical properties in "
            "float64 (see the description), not element by element against PyTorch."
        )
    tol = task.tolerance
    rule = (
        "exactly"
        if tol.rtol == 0 and tol.atol == 0
        else f"element-wise with |out - ref| <= {tol.atol:g} + {tol.rtol:g} * |ref|"
    )
    steps = " (a few elements may be one quantization step off: see Precision)"
    return (
        f"Outputs are compared with PyTorch's {rule}{steps if task.quant else ''}; shapes and "
        "dtypes must match exactly, and NaN/Inf must appear where PyTorch has them."
    )


def render(task: Task) -> str:
    shapes = "; ".join(sorted({c.label() for c in task.cases + task.bench}))
    parts = [
        HEADER,
        "",
        f"Functional Description: {task.description}",
        f"Wrapper Entry Information: {task.signature}",
    ]
    if task.math:
        parts.append(f"Math: {task.math}")
    if task.notes:
        parts.append(f"other: {task.notes}")
    parts += [
        "",
        "Contract:",
        f"- Define a module-level function `{task.entry}` with the signature above.",
        f"- Inputs exercised (shape dtype distribution arguments): {shapes}.",
        f"- Precision: {task.precision}",
        f"- {TRITON_RULE}",
        f"- Checking: {checking(task)}",
        "- Inputs include odd, non-power-of-two sizes, outliers and corner values; the large "
        "benchmark sizes are checked too, then timed against PyTorch eager on the same GPU.",
    ]
    if task.inplace:
        parts.append(
            f"- Arguments at positions {list(task.inplace)} must be updated in place; "
            "their final values are checked."
        )
    parts += ["", "Answer with one Python code block holding the complete module."]
    return "\n".join(parts)
