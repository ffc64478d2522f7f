"""GEAK's prompts (methods.md 2.4 and 7.2), in kbx's words: the base request, the JSON answer
format, the optimization block (the pool, best first), the debug history, the nine-criteria
score and the two reflections."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kbx.generate.feedback import Feedback

ROLE = "You are an expert Triton programmer who writes fast, correct GPU kernels."
REQUIREMENTS = """Requirements:
- Answer with one complete Python module: imports, @triton.jit kernels and the wrapper.
- Put the core computation in @triton.jit kernels; keep the wrapper's name, parameters and order.
- Import torch, triton and triton.language as tl; type-hint tensor arguments.
- Use tl.constexpr only for compile-time values; keep tl.arange bounds constexpr.
- Mind dtypes: accumulate in fp32 and cast back to the output dtype.
- Mask every load and store at the tensor's edges; get pointer arithmetic and strides right.
- Use tl.dot on 2-D blocks; check that a tl.math function exists before you use it.
- Assume Triton 3.1 or newer."""
CHECKLIST = "Before answering, check that every required signature is kept exactly."
JSON_SUFFIX = """Think about the approach first. Do not rename anything.
Answer strictly as one JSON object with two fields: "strategy" (your approach, in prose) and
"code" (the complete, runnable module as a string)."""
OPTIMIZE_HINTS = """Directions worth trying: coalesced memory access and fewer passes over
memory; occupancy (block sizes, num_warps, num_stages); @triton.autotune over configurations;
fusing work into fewer kernels; reading the generated IR for wasted work."""
CRITERIA = (
    "fusion", "autotuning_coverage", "memory_access", "algorithmic_complexity",
    "warp_utilization", "pipelining", "numerical_stability", "edge_case_handling",
    "optimization_scope",
)  # fmt: skip
METRICS = """Metrics: the runnable test imports the module and calls it on the task's inputs;
the correctness test compares its outputs with PyTorch's; speedup is PyTorch eager time over
the kernel's time (above 1 is faster)."""


@dataclass(frozen=True)
class Shown:
    """An earlier attempt as a prompt shows it."""

    code: str
    strategy: str
    reflection: str
    feedback: Feedback | None
    speedup: float | None = None


def base(instruction: str, platform: str, signatures: Sequence[str]) -> str:
    parts = [ROLE, f"Target platform: {platform}.", "", "Task:", instruction, ""]
    if signatures:
        parts += ["Required function signatures:", *[f"- {s}" for s in signatures], ""]
    return "\n".join([*parts, REQUIREMENTS, CHECKLIST])


def fence(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


def one_shot(description: str, code: str) -> str:
    return f"An example of a Triton program ({description}):\n{fence(code)}"


def optimize(pool: Sequence[Shown]) -> str:
    """The pool, best first: code, speedup and the reflection as its strategy."""
    parts = ["Earlier correct implementations, ordered by speedup, best first:", OPTIMIZE_HINTS]
    for rank, member in enumerate(pool, start=1):
        parts += [
            f"Implementation {rank} (speedup {member.speedup:.3f}):",
            fence(member.code),
            f"Strategy and analysis: {member.reflection or member.strategy}",
        ]
    parts.append(
        "Compare these strategies, propose a better one, and write faster code that stays correct."
    )
    return "\n\n".join(parts)


def history(attempts: Sequence[Shown]) -> str:
    parts = ["Previous attempts and their test results:"]
    for i, attempt in enumerate(attempts, start=1):
        summary = attempt.feedback.summary() if attempt.feedback else "not tested"
        parts += [f"Attempt {i}:", fence(attempt.code), f"Test results:\n{summary}"]
        parts.append(f"Analysis: {attempt.reflection or '(none)'}")
    parts.append("Fix the problems above and write a correct version.")
    return "\n\n".join(parts)


def score(instruction: str, code: str, platform: str) -> str:
    fields = ", ".join(f'"{c}"' for c in CRITERIA)
    return "\n\n".join(
        [
            f"You review Triton kernels for {platform}. Task:\n{instruction}",
            f"Candidate:\n{fence(code)}",
            f"Score the candidate from 0 to 1 on each of: {fields}. Answer with one JSON "
            "object holding exactly these fields, each a number.",
        ]
    )


def reflect(instruction: str, attempt: Shown, lineage: Sequence[Shown]) -> str:
    """The error analysis for a failing attempt; the strategy analysis for a correct one."""
    parts = [ROLE, "You improve a kernel over several attempts.", f"Task:\n{instruction}"]
    parts += [REQUIREMENTS, METRICS]
    if lineage:
        parts.append("Evolution so far:\n" + "\n".join(f"- {a.strategy[:300]}" for a in lineage))
    parts += [f"Current program:\n{fence(attempt.code)}"]
    result = attempt.feedback.summary() if attempt.feedback else "not tested"
    parts.append(f"Its test result:\n{result}")
    if attempt.feedback and attempt.feedback.exe_ok:
        ask = "It is correct. Analyse its optimization strategy and what limits its speed."
    else:
        ask = "It fails. Analyse the cause of the failure and how to fix it."
    parts.append(f"{ask} Write your reflection in a code block tagged `reflection`.")
    return "\n\n".join(parts)
