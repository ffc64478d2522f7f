"""A correct GELU that runs its kernel on a side stream and returns without waiting for it.

Timing must still count the kernel (kbx synchronizes the whole device inside the timed region):
tests/test_gpu.py compares its time with the reference solution's."""

import torch
import triton
import triton.language as tl

_side = []


@triton.jit
def _gelu_kernel(x_ptr, y_ptr, n, APPROX_TANH: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if APPROX_TANH:
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        y = 0.5 * x * (2.0 - 2.0 / (tl.exp(2.0 * inner) + 1.0))
    else:
        y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y, mask=mask)


def gelu(input, approximate="none"):
    if not _side:
        _side.append(torch.cuda.Stream())
    x = input.contiguous()
    y = torch.empty_like(x)
    _side[0].wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side[0]):
        _gelu_kernel[(triton.cdiv(x.numel(), 1024),)](
            x, y, x.numel(), APPROX_TANH=approximate == "tanh", BLOCK=1024
        )
    return y
