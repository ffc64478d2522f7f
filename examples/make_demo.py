"""Rebuild examples/demo.jsonl: a KernelBench-X style JSONL mixing correct and faulty kernels.
All lines are one run (method "demo"); ``example`` says what a line shows; kbx ignores it.

Run from the repository root: python examples/make_demo.py
"""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEP = "#" * 146


def code(path: str) -> str:
    return (ROOT / path).read_text()


def main() -> None:
    lines = [
        # a chat answer: prose, a fenced block, an end token
        {
            "file": "Activation/gelu.py",
            "method": "demo",
            "example": "reference",
            "predict": "Here is the kernel:\n```python\n"
            + code("solutions/reference/Activation/gelu.py")
            + "```\n<|im_end|>",
        },
        # a KernelBench-X style file carrying its own test below the separator: dropped unrun
        {
            "file": "Math/rsqrt.py",
            "method": "demo",
            "example": "reference",
            "predict": code("solutions/reference/Math/rsqrt.py") + f"\n{SEP}\nimport torch\n"
            "torch.manual_seed(0)\ntest_results = {'x': torch.randn(3)}\n",
        },
        {
            "file": "Pooling/avg_pool1d.py",
            "method": "demo",
            "example": "reference",
            "predict": code("solutions/reference/Pooling/avg_pool1d.py"),
        },
        {
            "file": "Reduce/sum.py",
            "method": "demo",
            "example": "zeros",
            "predict": code("tests/bad/mismatch/Reduce/sum.py"),
        },
        {
            "file": "Activation/gelu.py",
            "method": "demo",
            "example": "torch-only",
            "predict": code("tests/bad/no_triton/Activation/gelu.py"),
        },
        {
            "file": "Activation/gelu.py",
            "method": "demo",
            "example": "typo",
            "predict": code("tests/bad/import_failed/Activation/gelu.py"),
        },
        {
            "file": "Activation/gelu.py",
            "method": "demo",
            "example": "flattens",
            "predict": code("tests/bad/wrong_shape/Activation/gelu.py"),
        },
        {
            "file": "Math/rsqrt.py",
            "method": "demo",
            "example": "segfault",
            "predict": code("tests/bad/crashed/Math/rsqrt.py"),
        },
        {
            "file": "Activation/swiglu.py",
            "method": "demo",
            "example": "unknown task",
            "predict": code("solutions/reference/Activation/gelu.py"),
        },
        {"file": "Activation/gelu.py", "method": "demo", "example": "empty", "predict": ""},
    ]
    text = "".join(json.dumps(rec) + "\n" for rec in lines)
    text += '{"file": "Math/rsqrt.py", "predict": "truncated line\n'  # a malformed line
    (ROOT / "examples" / "demo.jsonl").write_text(text)


if __name__ == "__main__":
    main()
