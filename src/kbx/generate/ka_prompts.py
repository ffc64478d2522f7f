"""KernelAgent's prompts (methods.md 3.2), in kbx's words: the test file, the kernel from the
test alone, and the refinement with the last run's output and a clipped history."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

GUIDELINES = """Triton guidelines:
- One @triton.jit kernel per fused computation; launch it over a grid of program ids.
- Mask loads and stores at the edges; compute offsets from strides.
- Accumulate reductions in fp32; use tl.dot for matrix products on 2-D blocks.
- Prefer @triton.autotune over hand-picked block sizes when the best choice depends on shape.
- Fuse element-wise work into the kernel that produces its input."""
RULES = """Rules:
- Write a function `kernel_function` that takes the inputs as the test passes them and returns
  the result; it allocates outputs and launches your Triton kernels.
- Do the computation in Triton. Do not call torch.nn, torch.nn.functional, torch matmul or
  convolution helpers, torch.ops.aten, einsum or PyTorch activations; do not inspect frames.
- Do not read expected outputs or the reference from the test."""


@dataclass(frozen=True)
class Tried:
    kernel: str
    stderr: str
    stdout: str


def test_file(description: str) -> str:
    return f"""Write a standalone Python test file for a Triton kernel.

Problem:
{description}

Requirements:
- `from kernel import kernel_function` and call it as a plain function.
- Build inputs locally with the shapes and dtypes the problem gives, random and non-zero;
  choose the device with torch.cuda.is_available() rather than a literal device string.
- Compute the expected result with PyTorch inside the test; never pass it to the kernel.
- Compare with torch.allclose (rtol = atol = 1e-3 by default; looser for fp16/bf16 or long
  reductions, with a comment saying why); print diagnostics.
- Exit with code 0 when the kernel is correct and 1 otherwise; let a NameError surface.
Answer with the file in one ```python block."""


def kernel(test: str) -> str:
    return f"""{GUIDELINES}

The kernel must pass this test:
```python
{test.rstrip()}
```

{RULES}
Answer with the complete kernel.py in one ```python block."""


def refine(test: str, current: str, stderr: str, stdout: str, past: Sequence[Tried]) -> str:
    attempts = "\n\n".join(
        f"Attempt {i}:\n```python\n{t.kernel}\n```\nstderr:\n{t.stderr}\nstdout:\n{t.stdout}"
        for i, t in enumerate(past, start=1)
    )
    return f"""{GUIDELINES}

The test:
```python
{test.rstrip()}
```

The current kernel:
```python
{current.rstrip()}
```

Error output:
{stderr}

Standard output:
{stdout}

Previous attempts:
{attempts or "(none)"}

{RULES}
Fix the kernel. Answer with the complete kernel.py in one ```python block."""
