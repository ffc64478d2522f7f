"""kbx's CPU backend makes Triton's interpreter compute what compiled GPU code computes."""

import json
import os
import subprocess
import sys

from tests.conftest import ROOT

PROGRAM = r"""
import json
import torch
import triton
import triton.language as tl
from kbx.sandbox.child import interp

interp.apply()


@triton.jit
def clamp(x_ptr, lo_ptr, hi_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(lo_ptr + offs, tl.maximum(x, -1.0), mask=offs < n)
    tl.store(hi_ptr + offs, tl.minimum(x, 1.0), mask=offs < n)


x = torch.tensor([float("nan"), -5.0, 0.5, 5.0])
lo, hi = torch.empty_like(x), torch.empty_like(x)
clamp[(1,)](x, lo, hi, 4, BLOCK=4)
print(json.dumps([lo.tolist(), hi.tolist()]))
"""


def test_min_max_of_floats_return_the_non_nan_operand_as_on_the_gpu():
    """PTX max.f32 / min.f32 (LLVM maxnum) ignore a NaN operand; numpy's maximum does not.  A
    clamp that turns NaN into a number must fail on the CPU as it does on the GPU."""
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(ROOT / "src"))
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, check=True
    )
    lo, hi = json.loads(out.stdout.strip().splitlines()[-1])
    assert lo == [-1.0, -1.0, 0.5, 5.0]
    assert hi == [1.0, -5.0, 0.5, 1.0]


LOOP_BOUND = r"""
import json
import numpy as np
import torch
import triton
import triton.language as tl
from triton.runtime.interpreter import TensorHandle
from kbx.sandbox.child import interp

interp.apply()


@triton.jit
def partial_sums(x_ptr, out_ptr, n, SLICE: tl.constexpr):
    s = tl.program_id(0)
    end = tl.minimum(n, (s + 1) * SLICE)
    total = 0.0
    for i in range(s * SLICE, end):
        total += tl.load(x_ptr + i)
    tl.store(out_ptr + s, total)


x = torch.arange(10.0)
out = torch.empty(3)
partial_sums[(3,)](x, out, 10, SLICE=4)
block = tl.tensor(TensorHandle(np.array([7], dtype=np.int32), tl.int32), tl.int32)
print(json.dumps([out.tolist(), interp.as_index(block)]))
"""


def test_a_one_element_block_bounds_a_loop_on_every_supported_triton():
    """``range(a, tl.minimum(b, c))`` in a kernel: the bound is a one-element block, read as an
    index as Triton 3.7's interpreter reads it (3.6's fails under NumPy 2.4)."""
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(ROOT / "src"))
    out = subprocess.run(
        [sys.executable, "-c", LOOP_BOUND], env=env, capture_output=True, text=True, check=True
    )
    sums, index = json.loads(out.stdout.strip().splitlines()[-1])
    assert sums == [6.0, 22.0, 17.0]
    assert index == 7


BODIES = r"""
import json
import math
import numpy as np
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice
from types import SimpleNamespace
from triton.runtime.jit import TensorWrapper
from triton.runtime.interpreter import (
    InterpretedFunction, InterpreterBuilder, TensorHandle, interpreter_builder,
)
from kbx.sandbox.child import interp

rules = interp.rules()
rewrite = InterpretedFunction.rewrite
LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)


def helper(x):
    return x


@triton.jit
def twice(x):
    return x * 2


@triton.jit
def honest(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    y = libdevice.erfc(twice(x)) + tl.zeros((BLOCK,), tl.float32) * LOG2E + math.pi
    for _ in range(min(2, BLOCK)):
        y = tl.maximum(y, 0.0)
    tl.store(y_ptr + offs, tl.sigmoid(y), mask=offs < n)


@triton.jit
def calls_helper(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr, helper(tl.load(x_ptr)))


@triton.jit
def numpy_block(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr)
    tl.store(x_ptr, np.tanh(x.handle.data))


@triton.jit
def torch_in_device(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr, uses_torch(tl.load(x_ptr)))


@triton.jit
def uses_torch(x):
    return torch.tanh(x)


@triton.jit
def calls_argument(x_ptr, FN: tl.constexpr):
    tl.store(x_ptr, FN(tl.load(x_ptr)))


@triton.jit
def numpy_device(x):
    return np.tanh(x.handle.data)


@triton.jit
def first(a, b):
    return a


def swapped(a, b):
    return np.tanh(a.handle.data)


first.fn = swapped


@triton.jit
def reduces(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr, tl.reduce(x, 0, first))


x = torch.ones(4)
found = {}
for name, kernel, extra in [
    ("honest", honest, {}), ("calls_helper", calls_helper, {}), ("numpy_block", numpy_block, {}),
    ("torch_in_device", torch_in_device, {}), ("calls_argument", calls_argument, {"FN": helper}),
]:
    args = (x, x, 4) if name == "honest" else (x,)
    kwargs = {"BLOCK": 4, **extra} if name != "calls_argument" else extra
    found[name] = interp.checked(kernel, args, kwargs, rules, rewrite)[1]
sigmoid, tl.sigmoid = tl.sigmoid, helper
found["patched"] = interp.checked(honest, (x, x, 4), {"BLOCK": 4}, rules, rewrite)[1]
tl.sigmoid = sigmoid
found["device_argument"] = interp.checked(
    calls_argument, (x,), {"FN": numpy_device}, rules, rewrite
)[1]
found["constexpr_device"] = interp.checked(
    calls_argument, (x,), {"FN": tl.constexpr(numpy_device)}, rules, rewrite
)[1]
found["swapped_fn"] = interp.checked(reduces, (x,), {"BLOCK": 4}, rules, rewrite)[1]
tl.core.tensor.relu = property(helper)
found["property"] = interp.checked(honest, (x, x, 4), {"BLOCK": 4}, rules, rewrite)[1]
del tl.core.tensor.relu
found["restored"] = interp.checked(honest, (x, x, 4), {"BLOCK": 4}, rules, rewrite)[1]
multiply, np.multiply = np.multiply, helper
found["numpy"] = interp.checked(honest, (x, x, 4), {"BLOCK": 4}, rules, rewrite)[1]
np.multiply = multiply
store = InterpreterBuilder.create_masked_store
InterpreterBuilder.create_masked_store = helper
found["builder"] = interp.checked(honest, (x, x, 4), {"BLOCK": 4}, rules, rewrite)[1]
InterpreterBuilder.create_masked_store = store
interpreter_builder.create_masked_store = helper
found["instance"] = interp.checked(honest, (x, x, 4), {"BLOCK": 4}, rules, rewrite)[1]
del interpreter_builder.create_masked_store
tl.settings = SimpleNamespace()  # no function, no descriptor: still not the language's
found["object"] = interp.checked(honest, (x, x, 4), {"BLOCK": 4}, rules, rewrite)[1]
del tl.settings
tl.__warningregistry__ = {}  # a warning issued from the language's code leaves one
found["registry"] = interp.checked(honest, (x, x, 4), {"BLOCK": 4}, rules, rewrite)[1]
del tl.__warningregistry__
torch.Tensor.data_ptr = helper  # called on each tensor argument inside the launch
found["tensor"] = interp.checked(honest, (x, x, 4), {"BLOCK": 4}, rules, rewrite)[1]
del torch.Tensor.data_ptr
import builtins
printer, builtins.print = builtins.print, helper  # the interpreter's tl.static_print
found["print"] = interp.checked(honest, (x, x, 4), {"BLOCK": 4}, rules, rewrite)[1]
builtins.print = printer
wrapper = TensorWrapper(x, tl.float32)
wrapper.base = SimpleNamespace(data_ptr=helper)
found["wrapper"] = interp.checked(honest, (wrapper, x, 4), {"BLOCK": 4}, rules, rewrite)[1]
found["grid"] = interp.grid_shape(
    honest, lambda meta: (meta["BLOCK"] // 2, 1), (x, x, 4), {"BLOCK": 4}, rewrite
)
print(json.dumps(found))
"""


def test_a_kernel_body_is_triton_only():
    """In the interpreter a kernel body runs as Python: one that reaches a Python function, NumPy,
    the block's NumPy array, torch (in a device function too), a Python function passed as an
    argument, a device function handed in whose body does so, a combine function whose raw
    ``.fn`` was swapped, or a triton.language function or property the candidate replaced, or
    with the interpreter's own builder, NumPy's functions or torch.Tensor's methods replaced, or
    an object of the candidate's put in the language, is not Triton work; one of
    triton.language, libdevice, device functions, constexprs, math constants and the builtins a
    compiled kernel may call is."""
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(ROOT / "src"))
    out = subprocess.run(
        [sys.executable, "-c", BODIES], env=env, capture_output=True, text=True, check=True
    )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["honest"] is None
    assert "helper (a function)" in found["calls_helper"]
    assert ".handle" in found["numpy_block"] and "np.tanh" in found["numpy_block"]
    assert "torch.tanh" in found["torch_in_device"]
    assert "argument FN (a function)" in found["calls_argument"]
    assert "sigmoid replaced" in found["patched"]
    assert "numpy_device: np.tanh" in found["device_argument"]  # a device function handed in
    assert "numpy_device: np.tanh" in found["constexpr_device"]
    assert "swapped: np.tanh" in found["swapped_fn"]  # the raw .fn a reduction calls
    assert "relu replaced" in found["property"]  # a property's getter runs Python too
    assert found["restored"] is None
    assert "numpy.multiply" in found["numpy"]  # the interpreter's own code looks it up
    assert "InterpreterBuilder.create_masked_store" in found["builder"]
    assert "interpreter_builder.create_masked_store" in found["instance"]
    assert "settings replaced" in found["object"]
    assert found["registry"] is None
    assert "torch.Tensor.data_ptr" in found["tensor"]
    assert "builtins.print" in found["print"]
    assert "argument 0 (a SimpleNamespace in a TensorWrapper)" in found["wrapper"]
    assert found["grid"] == [2, 1]  # a plain tuple, computed before the check


def test_a_bodys_getattr_names_are_read_once_per_code_and_alike_for_equal_code():
    """The launch gate reads the names a body hands ``getattr``/``hasattr`` at every launch; they
    are kept per code object, and code objects of the same source give the same names."""
    from kbx.sandbox.child import interp

    source = "def body(x, n):\n    return getattr(x, 'handle'), getattr(x, n)\n"
    first, second = (compile(source, "k.py", "exec").co_consts[0] for _ in range(2))
    assert first is not second and first == second
    names = interp.named_by_builtin(first)
    assert names == ("handle", None)
    assert interp.named_by_builtin(second) is names  # read once
