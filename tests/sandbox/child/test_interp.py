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
