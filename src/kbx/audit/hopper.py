"""Compile the Triton kernels a solution launches for Hopper (sm_90) without a GPU.

The CPU interpreter runs kernels that the GPU compiler would reject (a non-constexpr global, an
unsupported type combination, a misuse of ``tl.dot``...).  The audit records every distinct
launch it sees in the interpreter (kernel, argument types, constexpr values, ``num_warps``...);
``python -m kbx.audit.hopper SPECS.jsonl`` then compiles each one with ``triton.compile`` for
``GPUTarget("cuda", 90, 32)`` in a process without ``TRITON_INTERPRET`` and prints one JSON line
per launch: ``{"task_id", "kernel", "ok", "error"}``.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import sys
from typing import Any

import torch

OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion")
POINTER = {
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.float64: "fp64",
    torch.int8: "i8",
    torch.int16: "i16",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.uint8: "u8",
    torch.bool: "i1",
}


def scalar_type(value: Any) -> str | None:
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    return None


def spec_of(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """A JSON-able description of one launch of the Python kernel function ``fn``."""
    params = list(inspect.signature(fn).parameters.values())
    bound = dict(zip([p.name for p in params], args, strict=False))
    bound.update({k: v for k, v in kwargs.items() if k not in OPTIONS})
    signature, constexprs = {}, {}
    for p in params:
        value = bound.get(p.name, p.default)
        if "constexpr" in str(p.annotation) or value is None:
            if not (value is None or isinstance(value, bool | int | float | str)):
                return None  # e.g. a dtype constexpr: not recorded
            signature[p.name], constexprs[p.name] = "constexpr", value
        elif isinstance(value, torch.Tensor):
            if value.dtype not in POINTER:
                return None
            signature[p.name] = "*" + POINTER[value.dtype]
        elif (kind := scalar_type(value)) is not None:
            signature[p.name] = kind
        else:
            return None
    options = {k: kwargs[k] for k in OPTIONS if k in kwargs}
    return {
        "kernel": fn.__name__,
        "signature": signature,
        "constexprs": constexprs,
        "options": options,
    }


def find_kernel(module: Any, name: str) -> Any:
    from triton.runtime.jit import JITFunction

    obj = getattr(module, name, None)
    while obj is not None and not isinstance(obj, JITFunction):
        obj = getattr(obj, "fn", None)  # Autotuner / Heuristics wrap the JITFunction
    return obj


def compile_spec(spec: dict[str, Any], modules: dict[str, Any]) -> str | None:
    """None when the launch compiles for sm_90, else the compiler's message."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    path = spec["source"]
    if path not in modules:
        loader = importlib.util.spec_from_file_location(f"kbx_solution_{len(modules)}", path)
        assert loader is not None and loader.loader is not None
        modules[path] = importlib.util.module_from_spec(loader)
        loader.loader.exec_module(modules[path])
    kernel = find_kernel(modules[path], spec["kernel"])
    if kernel is None:
        return None  # not a module-level kernel: cannot be looked up, not judged here
    src = ASTSource(fn=kernel, signature=spec["signature"], constexprs=spec["constexprs"])
    try:
        triton.compile(src, target=GPUTarget("cuda", 90, 32), options=spec["options"])
    except Exception as exc:  # noqa: BLE001 - the compiler's verdict is the output
        return describe(exc)
    return None


def describe(exc: BaseException) -> str:
    """The compiler's error with its innermost cause first (a CompilationError's own text is the
    source of the outermost call; the reason is in its chain)."""
    causes = [exc]
    while causes[-1].__cause__ is not None and len(causes) < 10:
        causes.append(causes[-1].__cause__)
    root = causes[-1]
    lines = [ln for ln in str(root).strip().splitlines() if ln.strip()]
    reason = f"{type(root).__name__}: {lines[-1].strip() if lines else ''}"
    where = " ".join(str(exc).split())
    return f"{reason} | {type(exc).__name__}: {where}"[:800]


def main(specs_path: str) -> int:
    modules: dict[str, Any] = {}
    with open(specs_path) as f:
        specs = [json.loads(line) for line in f]
    for spec in specs:
        error = compile_spec(spec, modules)
        row = {
            "task_id": spec["task_id"],
            "kernel": spec["kernel"],
            "ok": error is None,
            "error": error,
        }
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
